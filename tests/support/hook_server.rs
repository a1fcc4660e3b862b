//! A scripted HTTP receiver on 127.0.0.1 (port 0) for the webhook tests: it answers each
//! request with the next scripted reply (the last one repeats) and keeps what it received.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::sync::Notify;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    /// Held until [`HookServer::release`] before answering.
    pub hold: bool,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            hold: false,
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn held(mut self) -> Self {
        self.hold = true;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
    answered: Mutex<usize>,
    release: Notify,
}

/// The running server.
pub struct HookServer {
    pub port: u16,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.received.lock().unwrap().push(Received {
        path: uri.path().to_string(),
        headers,
        body: body.to_vec(),
    });
    let reply = {
        let mut script = shared.script.lock().unwrap();
        if script.len() > 1 {
            script.pop_front().unwrap()
        } else {
            script.front().cloned().unwrap_or(Reply::status(200))
        }
    };
    if reply.hold {
        shared.release.notified().await;
    }
    let mut response = StatusCode::from_u16(reply.status).unwrap().into_response();
    for (name, value) in reply.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    *shared.answered.lock().unwrap() += 1;
    response
}

impl HookServer {
    /// Starts a server answering with `script` in order (the last reply repeats).
    pub async fn start(script: Vec<Reply>) -> HookServer {
        let shared = Arc::new(Shared::default());
        *shared.script.lock().unwrap() = script.into();
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        HookServer { port, shared, task }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What it received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// How many replies it has sent.
    pub fn answered(&self) -> usize {
        *self.shared.answered.lock().unwrap()
    }

    /// Lets a held reply go.
    pub fn release(&self) {
        self.shared.release.notify_one();
    }
}
