//! Loopback stand-ins for the services a test or benchmark needs on the
//! other end of a connection: a webhook receiver and a file host. Each is a
//! real HTTP server (axum) on 127.0.0.1, port 0. Part of the test support
//! (`tests/support/mod.rs`, built with the `serve` feature) that the tests
//! and the benchmarks share. The payment provider's fake lives in
//! tests/billing.rs and the vision provider's in tests/vision.rs, the one
//! place each is used.

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use std::net::SocketAddr;

/// Starts `app` on 127.0.0.1 (a free port) and returns its address.
pub async fn serve_loopback(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A webhook receiver at `http://ADDR/hook`: answers every POST with
/// `status` and hands each delivery's headers and body to the channel.
pub async fn webhook_receiver(status: u16) -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<(HeaderMap, Vec<u8>)>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: bytes::Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((headers, body.to_vec()));
                StatusCode::from_u16(status).expect("a valid status")
            }
        }),
    );
    (serve_loopback(app).await, rx)
}

/// A file host: `GET /asset.glb` answers `asset`; `GET /hop` redirects
/// (302) to `redirect_to`.
pub async fn file_host(asset: Vec<u8>, redirect_to: String) -> SocketAddr {
    let app = Router::new().route("/asset.glb", axum::routing::get(move || async move { asset.clone() })).route(
        "/hop",
        axum::routing::get(move || {
            let t = redirect_to.clone();
            async move { (StatusCode::FOUND, [("location", t)]) }
        }),
    );
    serve_loopback(app).await
}
