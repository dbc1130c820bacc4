#!/usr/bin/env python3
"""How long the web client takes from the login to its first usable screen, in headless
Chromium (Debian's, driven by Selenium through its ChromeDriver), on a running server.

The client marks the moment its sidebar and first page of messages are drawn
(`performance.mark("chronicle-first-screen")`). Each round signs in through the login form in a
fresh browser profile (nothing cached), logs out and signs in again (the client's files now
cached, as for someone who used it before), and reads each time, from the browser's own clock:

- from the form's submission (the password check included) to the first screen;
- from the login's answer (the redirect to the app) to the first screen.

Try it on the benchmark's 1,000-user organization:

    chronicle bench --write-org /tmp/org/data
    chronicle serve --data-dir /tmp/org/data --bind 127.0.0.1:9991 &
    .venv/bin/python scripts/web-first-screen.py --url http://127.0.0.1:9991 \\
        --email user2@bench.local --password bench-password
"""

import argparse
import statistics
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,860"]
TIMES = """
const mark = performance.getEntriesByName("chronicle-first-screen")[0];
if (!mark) return null;
const nav = performance.getEntriesByType("navigation")[0];
return {submitted: mark.startTime, answered: mark.startTime - nav.fetchStart,
        transferred: performance.getEntriesByType("resource").reduce((n, r) => n + r.transferSize, nav.transferSize)};
"""


def sign_in(driver, url, email, password):
    driver.get(f"{url}/login/")
    driver.find_element(By.ID, "username").send_keys(email)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    return WebDriverWait(driver, 30).until(lambda d: d.execute_script(TIMES))


def one_round(url, email, password):
    """(cold, warm): the first sign-in in a new profile, then a second one in the same."""
    with tempfile.TemporaryDirectory() as profile:
        options = webdriver.ChromeOptions()
        for flag in FLAGS + [f"--user-data-dir={profile}"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            cold = sign_in(driver, url, email, password)
            driver.find_element(By.ID, "logout").click()
            WebDriverWait(driver, 30).until(lambda d: "/login/" in d.current_url)
            return cold, sign_in(driver, url, email, password)
        finally:
            driver.quit()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--email", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    rounds = [one_round(args.url, args.email, args.password) for _ in range(args.rounds)]
    for visit, which in [(0, "new browser"), (1, "files cached")]:
        for name, label in [("submitted", "from the form's submission"), ("answered", "from the login's answer")]:
            values = sorted(r[visit][name] for r in rounds)
            print(f"{which}: first screen {label}: median {statistics.median(values):.0f} ms, "
                  f"worst {values[-1]:.0f} ms ({len(values)} rounds)")
        print(f"{which}: bytes transferred (page, files and API answers): {rounds[0][visit]['transferred']:,}")


if __name__ == "__main__":
    main()
