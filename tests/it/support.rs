//! A real server in a temp dir, and a small client for it.

use reqwest::{Client, Method, StatusCode};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub const OWNER: &str = "owner@chronicle.local";

/// The token that opens `/metrics` of a server started by [`Server::start_observed`].
const METRICS_TOKEN: &str = "a-test-metrics-token";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_chronicle")
}

/// Runs `chronicle ARGS` to its end; its standard output, or the test fails with its standard
/// error.
pub fn run_ok<'a>(args: impl IntoIterator<Item = &'a std::ffi::OsStr>) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A running `chronicle serve`.
pub struct Server {
    pub dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    pub child: Child,
    pub url: String,
    pub owner_key: String,
    stderr_path: PathBuf,
}

/// Credentials of one account.
#[derive(Clone, Debug)]
pub struct Creds {
    pub email: String,
    pub key: String,
}

impl Server {
    /// A fresh organization in a new temp dir.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// A fresh organization, with extra `serve` arguments.
    pub fn start_with(args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let mut server = Server::start_in_with(&dir, args).expect("server starts");
        server._tmp = Some(tmp);
        server
    }

    /// A fresh organization whose `/metrics` the test reads ([`Server::metric`]), opened on the
    /// main address by a token.
    pub fn start_observed() -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let token = [("CHRONICLE_METRICS_TOKEN", METRICS_TOKEN)];
        let mut server = Server::start_in_with_env(&dir, &[], &token).expect("server starts");
        server._tmp = Some(tmp);
        server
    }

    /// A gauge's or counter's value, summed over its series, from the `/metrics` of a server
    /// started by [`Server::start_observed`].
    pub async fn metric(&self, name: &str) -> f64 {
        let answer = Client::new()
            .get(format!("{}/metrics", self.url))
            .bearer_auth(METRICS_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "no /metrics to read");
        let text = answer.text().await.unwrap();
        text.lines()
            .filter(|line| {
                line.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
            })
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    }

    /// Waits (up to 30 s) until `count` long-polls are parked on a server started by
    /// [`Server::start_observed`]: a request sent from another task is known to have arrived.
    pub async fn wait_parked(&self, count: usize) {
        let start = std::time::Instant::now();
        while self.metric("chronicle_parked_long_polls").await != count as f64 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{count} long-polls were not parked in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts on an existing (or empty) data dir; `Err(stderr)` if the process exits instead.
    pub fn start_in(dir: &Path) -> Result<Server, String> {
        Server::start_in_with(dir, &[])
    }

    pub fn start_in_with(dir: &Path, args: &[&str]) -> Result<Server, String> {
        Server::start_in_with_env(dir, args, &[])
    }

    /// Starts on `dir` with extra `serve` arguments and environment variables.
    pub fn start_in_with_env(
        dir: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Result<Server, String> {
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        let stderr_path = dir.with_extension(format!("stderr-{}", rand_suffix()));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut child = Command::new(bin())
            .args(["serve", "--data-dir"])
            .arg(dir)
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "info")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("Chronicle listening on ") {
                    let url = rest.split_whitespace().next().unwrap_or_default();
                    // Under an --external-url the tests still talk to the bound address.
                    let bound = rest
                        .split_once("(bound to ")
                        .map(|(_, addr)| addr.trim_end_matches(')'));
                    let url = match bound {
                        Some(addr) if !url.starts_with("http://127.0.0.1") => {
                            format!("http://{addr}")
                        }
                        _ => url.to_owned(),
                    };
                    let _ = tx.send(url);
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => {
                let owner_key = zuliprc_value(&dir.join("zuliprc"), "key");
                Ok(Server {
                    dir: dir.to_path_buf(),
                    _tmp: None,
                    child,
                    url,
                    owner_key,
                    stderr_path,
                })
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(std::fs::read_to_string(&stderr_path).unwrap_or_default())
            }
        }
    }

    pub fn owner(&self) -> Creds {
        Creds {
            email: OWNER.into(),
            key: self.owner_key.clone(),
        }
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// SIGTERM, and waits for a clean exit.
    pub fn stop(mut self) -> Stopped {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = self.child.wait().unwrap();
        assert!(
            exit.success(),
            "server exited with {exit}: {}",
            self.stderr()
        );
        self.into_stopped()
    }

    /// SIGKILL by the child's own pid: no chance to flush anything.
    pub fn kill9(mut self) -> Stopped {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.into_stopped()
    }

    fn into_stopped(mut self) -> Stopped {
        Stopped {
            dir: self.dir.clone(),
            tmp: self._tmp.take(),
        }
    }

    pub fn api(&self, creds: Option<&Creds>) -> Api {
        Api {
            client: Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            base: format!("{}/api/v1", self.url),
            creds: creds.cloned(),
        }
    }

    /// Creates a member through `POST /users` and fetches its API key.
    pub async fn create_member(&self, email: &str, name: &str) -> (u64, Creds) {
        let owner = self.api(Some(&self.owner()));
        let (status, body) = owner
            .post(
                "/users",
                &[
                    ("email", email),
                    ("password", "password123"),
                    ("full_name", name),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let user_id = body["user_id"].as_u64().unwrap();
        let (status, body) = self
            .api(None)
            .post(
                "/fetch_api_key",
                &[("username", email), ("password", "password123")],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let key = body["api_key"].as_str().unwrap().to_owned();
        (
            user_id,
            Creds {
                email: email.into(),
                key,
            },
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A data directory whose server has exited.
pub struct Stopped {
    pub dir: PathBuf,
    tmp: Option<tempfile::TempDir>,
}

impl Stopped {
    pub fn restart(self) -> Server {
        self.restart_with(&[])
    }

    /// Restarts with extra `serve` arguments.
    pub fn restart_with(mut self, args: &[&str]) -> Server {
        let mut server = Server::start_in_with(&self.dir, args).expect("server restarts");
        server._tmp = self.tmp.take();
        server
    }
}

fn rand_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

pub fn zuliprc_value(path: &Path, key: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in zuliprc"))
        .to_owned()
}

/// A client bound to one set of credentials (or none).
pub struct Api {
    pub client: Client,
    pub base: String,
    pub creds: Option<Creds>,
}

impl Api {
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let (status, _, body) = self.call_raw(method, path, params).await;
        let json = serde_json::from_str(&body)
            .unwrap_or_else(|_| panic!("non-JSON body ({status}): {body}"));
        (status, json)
    }

    pub async fn call_raw(
        &self,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
    ) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let url = format!("{}{}", self.base, path);
        let mut req = self.client.request(method.clone(), &url);
        if method == Method::GET {
            req = req.query(params);
        } else {
            req = req.form(params);
        }
        if let Some(c) = &self.creds {
            req = req.basic_auth(&c.email, Some(&c.key));
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        (status, headers, resp.text().await.unwrap())
    }

    pub async fn get(&self, path: &str, params: &[(&str, &str)]) -> (StatusCode, Value) {
        self.call(Method::GET, path, params).await
    }

    pub async fn post(&self, path: &str, params: &[(&str, &str)]) -> (StatusCode, Value) {
        self.call(Method::POST, path, params).await
    }

    pub async fn delete(&self, path: &str, params: &[(&str, &str)]) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, params).await
    }

    /// A GET of a whole URL (an avatar, an uploaded file) with these credentials.
    pub async fn fetch(&self, url: &str) -> reqwest::Response {
        let mut req = self.client.get(url);
        if let Some(c) = &self.creds {
            req = req.basic_auth(&c.email, Some(&c.key));
        }
        req.send().await.unwrap()
    }

    /// The id of the user group named `name` (`role:administrators`, ...).
    pub async fn group_id(&self, name: &str) -> u64 {
        let (_, groups) = self.get("/user_groups", &[]).await;
        groups["user_groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("no group {name}: {groups}"))["id"]
            .as_u64()
            .unwrap()
    }
}

/// Now, as RFC 3339 (for the audit filters), a few milliseconds after the last event.
pub fn now_rfc3339() -> String {
    std::thread::sleep(Duration::from_millis(5));
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    chronicle::time::iso8601_ms(ms)
}
