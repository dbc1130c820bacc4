//! What the address answers while the state is loaded: `/health` 200 (alive), `/ready` 503
//! (starting), every other request a Zulip-shaped 503, each on a connection closed after its
//! answer.
//!
//! It is a small loop of its own rather than a second actix server because the hand-over must
//! cut no connection: a stopped actix worker drops the connections its accept thread had
//! already passed it (a probe during the hand-over got a cut connection, and the suite failed
//! on it). Here the loop stops taking connections, answers every one it took, and only then
//! does the serving application take the listener, whose queue kept whatever arrived meanwhile.

use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;

/// The longest request head read (a probe's is a few hundred bytes).
const MAX_HEAD: usize = 8 * 1024;
/// How long a connection may take to send its request head.
const HEAD_TIME: Duration = Duration::from_secs(5);
/// How long a request body left unread is drained after the answer, so that closing the
/// connection does not reset it before the client has read the answer.
const DRAIN_TIME: Duration = Duration::from_secs(1);
const MAX_DRAIN: usize = 64 * 1024;

/// The responder while it runs; [`Starting::hand_over`] ends it.
pub struct Starting {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Starting {
    /// Answers on a clone of `listener` until [`Starting::hand_over`].
    pub fn answer(listener: &std::net::TcpListener) -> std::io::Result<Starting> {
        let clone = listener.try_clone()?;
        clone.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(clone)?;
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut answering = JoinSet::new();
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    accepted = listener.accept() => {
                        if let Ok((stream, _)) = accepted {
                            answering.spawn(answer_one(stream));
                        }
                    }
                    Some(_) = answering.join_next(), if !answering.is_empty() => {}
                }
            }
            // No more connections are taken from the queue; those taken are answered.
            drop(listener);
            while answering.join_next().await.is_some() {}
        });
        Ok(Starting { stop, task })
    }

    /// Stops taking connections and returns once every connection taken has its answer.
    pub async fn hand_over(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// What a request gets: status line, extra headers, body.
fn answer_for(method: &str, path: &str) -> (&'static str, serde_json::Value) {
    let path = path.split('?').next().unwrap_or_default();
    match (method, path) {
        ("GET" | "HEAD", "/health") => ("200 OK", json!({"status": "alive"})),
        ("GET" | "HEAD", "/ready") => (
            "503 Service Unavailable",
            json!({"status": "starting", "reason": "loading the state"}),
        ),
        _ => (
            "503 Service Unavailable",
            json!({
                "result": "error",
                "msg": "The server is starting; try again in a moment",
                "code": "BAD_REQUEST",
            }),
        ),
    }
}

/// Reads one request head (bounded in size and time) and answers it.
async fn answer_one(mut stream: tokio::net::TcpStream) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read_head = async {
        loop {
            if head.windows(4).any(|w| w == b"\r\n\r\n") {
                return true;
            }
            if head.len() >= MAX_HEAD {
                return false;
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    let complete = matches!(tokio::time::timeout(HEAD_TIME, read_head).await, Ok(true));
    let text = String::from_utf8_lossy(&head);
    let mut words = text.split_ascii_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = if complete {
        answer_for(method, path)
    } else {
        (
            "400 Bad Request",
            json!({"result": "error", "msg": "Bad request", "code": "BAD_REQUEST"}),
        )
    };
    let body = body.to_string();
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    if stream.write_all(response.as_bytes()).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    // Whatever the client still sends (a body) is read and dropped for a moment.
    let drain = async {
        let mut drained = 0;
        while drained < MAX_DRAIN {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn ask(addr: std::net::SocketAddr, request: &[u8]) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn answers_while_starting_and_hands_over_without_losing_a_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let starting = Starting::answer(&listener).unwrap();
        let health = ask(addr, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(health.starts_with("HTTP/1.1 200 OK\r\n"), "{health}");
        assert!(health.ends_with(r#"{"status":"alive"}"#), "{health}");
        let ready = ask(addr, b"GET /ready?x=1 HTTP/1.1\r\n\r\n").await;
        assert!(ready.starts_with("HTTP/1.1 503 "), "{ready}");
        assert!(ready.contains(r#""status":"starting""#), "{ready}");
        let api = ask(
            addr,
            b"POST /api/v1/messages HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        )
        .await;
        assert!(api.contains(r#""result":"error""#), "{api}");
        let garbage = ask(addr, &[0xff; MAX_HEAD + 10]).await;
        assert!(garbage.starts_with("HTTP/1.1 400 "), "{garbage}");
        // Clients asking all through the hand-over each get a whole answer, from this
        // responder or from whoever takes the listener next.
        let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let answered = answered.clone();
                tokio::spawn(async move {
                    loop {
                        let answer = ask(addr, b"GET /health HTTP/1.1\r\n\r\n").await;
                        if answer.ends_with("next") {
                            return;
                        }
                        assert!(answer.ends_with(r#"{"status":"alive"}"#), "{answer}");
                        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                })
            })
            .collect();
        while answered.load(std::sync::atomic::Ordering::Relaxed) < 32 {
            tokio::task::yield_now().await;
        }
        starting.hand_over().await;
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            listener.set_nonblocking(false).unwrap();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut head = Vec::new();
                let mut buf = [0u8; 256];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nnext");
            }
        });
        for client in clients {
            client.await.unwrap();
        }
    }
}
