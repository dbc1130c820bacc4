//! The notifications scenario: direct messages and mentions to a thousand people away from
//! their clients (every one of them noticed, recorded and later mailed), against the same load
//! with their notifications switched off. Issue 36's goal: at least 0.9×.

use super::load::{client, drive};
use super::scenarios::{row, InProcess};
use super::seed::{seed, SeedSpec};
use super::Row;
use crate::server::Fatal;
use std::time::Duration;

/// Turns every seeded person's email and push notifications on or off.
async fn switch(
    http: &reqwest::Client,
    server: &InProcess,
    users: &[(u64, String, String)],
    on: bool,
) -> Result<(), Fatal> {
    let url = server.api("/settings");
    let value = if on { "true" } else { "false" };
    for chunk in users.chunks(32) {
        let mut pending = Vec::new();
        for (_, email, key) in chunk {
            let request = http
                .patch(&url)
                .basic_auth(email, Some(key))
                .form(&[
                    ("enable_offline_email_notifications", value),
                    ("enable_offline_push_notifications", value),
                ])
                .send();
            pending.push(request);
        }
        for request in pending {
            request.await?.error_for_status()?;
        }
    }
    Ok(())
}

/// Direct messages and mentions to people away, with notifications off and on in turn (off,
/// on, off, on: the log grows under both alike), each figure the mean of its rounds.
pub async fn notifications(quick: bool) -> Result<Vec<Row>, Fatal> {
    let people: u64 = if quick { 100 } else { 1000 };
    let (senders, budget, seconds) = if quick {
        (8usize, 2_000u64, 2u64)
    } else {
        (64, 200_000, 8)
    };
    let spec = SeedSpec {
        users: people + 1,
        channels: 1,
        subscribers_per_channel: 0,
        messages: 0,
    };
    let seeded = seed(&spec)?;
    let users = seeded.users.clone();
    let server = InProcess::start_in(seeded.tmp)?;
    let http = client()?;
    // The recipients (everyone but the owner), none with a client open.
    let recipients: Vec<(u64, String, String)> = users.iter().skip(1).cloned().collect();
    let url = server.api("/messages");
    let rounds: &[bool] = if quick {
        &[false, true]
    } else {
        &[false, true, false, true]
    };
    let mut measured: Vec<(bool, super::load::Stats)> = Vec::new();
    for &on in rounds {
        switch(&http, &server, &recipients, on).await?;
        let senders_creds: Vec<(String, String)> = recipients
            .iter()
            .take(senders)
            .map(|(_, e, k)| (e.clone(), k.clone()))
            .collect();
        let targets: Vec<u64> = recipients.iter().map(|(id, _, _)| *id).collect();
        let (stats, _) = drive(
            senders,
            budget,
            Duration::from_secs(seconds),
            |i| (senders_creds[i].clone(), i as u64, 0u64),
            {
                let http = http.clone();
                let url = url.clone();
                let targets = targets.clone();
                move |((email, key), i, n): ((String, String), u64, u64)| {
                    let http = http.clone();
                    let url = url.clone();
                    let target =
                        targets[((i * 7919 + n * 104_729) % targets.len() as u64) as usize];
                    async move {
                        let text = super::corpus::text(i * 1_000_003 + n, || {
                            format!("Message {n} from sender {i}.")
                        });
                        // Every other message a direct message, else a mention in the channel.
                        let form: Vec<(&str, String)> = if n % 2 == 0 {
                            vec![
                                ("type", "direct".into()),
                                ("to", format!("[{target}]")),
                                ("content", text),
                            ]
                        } else {
                            vec![
                                ("type", "stream".into()),
                                ("to", "channel 1".into()),
                                ("topic", format!("topic {}", n % 50)),
                                ("content", format!("@**User {target}** {text}")),
                            ]
                        };
                        let sent = http
                            .post(&url)
                            .basic_auth(&email, Some(&key))
                            .form(&form)
                            .send()
                            .await;
                        let ok = matches!(sent, Ok(r) if r.status().is_success());
                        (((email, key), i, n + 1), ok)
                    }
                }
            },
        )
        .await;
        measured.push((on, stats));
    }
    // Each mode: the mean rate of its rounds, with the latency and counts of its last.
    let mean = |on: bool| {
        let rates: Vec<f64> = measured
            .iter()
            .filter(|(o, _)| *o == on)
            .map(|(_, s)| s.per_second)
            .collect();
        rates.iter().sum::<f64>() / rates.len().max(1) as f64
    };
    let off_rate = mean(false);
    let mut rows = Vec::new();
    for on in [false, true] {
        let Some((_, last)) = measured.iter().rev().find(|(o, _)| *o == on) else {
            continue;
        };
        let mut stats = last.clone();
        stats.per_second = mean(on);
        stats.ok = measured
            .iter()
            .filter(|(o, _)| *o == on)
            .map(|(_, s)| s.ok)
            .sum();
        rows.push(row(
            "notifications",
            &format!(
                "DMs and mentions to {people} people away, {senders} senders, notifications {} (mean of {} rounds)",
                if on { "on" } else { "off" },
                rounds.iter().filter(|o| **o == on).count()
            ),
            &stats,
            "sends/s",
            on.then_some(off_rate),
            if on {
                "the same with notifications off"
            } else {
                ""
            },
        ));
    }
    // The measured sends were noticed: the log holds notices. (The log, not the dump: the
    // dump of a thousand people's copies of every message is too large to ask for here.)
    let listed: serde_json::Value = http
        .get(server.api("/admin/events"))
        .query(&[("type", "NoticesRecorded"), ("limit", "1")])
        .basic_auth(super::scenarios::OWNER, Some(&server.owner_key))
        .send()
        .await?
        .json()
        .await?;
    let recorded = listed["events"].as_array().is_some_and(|e| !e.is_empty());
    if !recorded {
        return Err(format!("the notifications scenario recorded no notices: {listed}").into());
    }
    server.stop().await?;
    Ok(rows)
}
