//! The unmodified `h3` crate over a two-path mpquic connection: requests with RFC 9218 priority
//! headers, responses whose urgency and size the server hands to the multipath stream before
//! writing, so that the scheduler (priority-bucket, wrapped here to record what it is told)
//! knows both before the stream's first byte is scheduled.

mod common;

use bytes::{Buf, Bytes};
use common::*;
use mpquic_core::h3::H3Connection;
use mpquic_core::Config;
use mpquic_h3_prio::{Priority, PriorityField};
use mpquic_sched::{RecordLog, Recorded, Recording, SchedulerKind};

/// The requests: path, priority header, response size.
const OBJECTS: [(&str, &str, usize); 4] = [
    ("/index.html", "u=0", 30_000),
    ("/style.css", "u=0", 12_000),
    ("/app.js", "u=1", 80_000),
    ("/hero.jpg", "u=5, i", 400_000),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urgency_and_size_reach_the_scheduler_before_the_first_byte() {
    let server_log = RecordLog::new(100_000);
    let log = server_log.clone();
    let mut server_config = Config::default();
    server_config.scheduler_factory("priority-bucket", move || {
        Box::new(Recording::new(
            SchedulerKind::PriorityBucket.build(),
            log.clone(),
        ))
    });
    let pair = pair_with_server_config(2, Config::default(), server_config).await;

    // The server: h3 over the multipath connection.
    let server_conn = pair.server.clone();
    let server = tokio::spawn(async move {
        let mut h3 = h3::server::builder()
            .build::<_, Bytes>(H3Connection::new(server_conn.clone()))
            .await
            .unwrap();
        let mut served = Vec::new();
        while let Ok(Some(resolver)) = h3.accept().await {
            let (request, mut stream) = resolver.resolve_request().await.unwrap();
            let priority = request
                .headers()
                .get("priority")
                .map(|v| Priority::from_field(v.as_bytes()))
                .unwrap_or_default();
            let size = OBJECTS
                .iter()
                .find(|o| o.0 == request.uri().path())
                .unwrap()
                .2;
            let id = mpquic_core::StreamId(stream.id().into_inner());
            server_conn.set_stream_priority(id, priority).unwrap();
            server_conn.set_stream_size_hint(id, size as u64).unwrap();
            served.push((id, priority.urgency(), size));
            let response = http::Response::builder().status(200).body(()).unwrap();
            stream.send_response(response).await.unwrap();
            stream
                .send_data(Bytes::from(payload(size as u64, size)))
                .await
                .unwrap();
            stream.finish().await.unwrap();
            if served.len() == OBJECTS.len() {
                break;
            }
        }
        // Keep the h3 connection (dropping it closes) until the client has read everything.
        (served, h3)
    });

    // The client: every request at once, each body checked.
    let (mut driver, send_request) = h3::client::new(H3Connection::new(pair.client.clone()))
        .await
        .unwrap();
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let requests: Vec<_> = OBJECTS
        .iter()
        .map(|&(path, priority, size)| {
            let mut send_request = send_request.clone();
            tokio::spawn(async move {
                let request = http::Request::get(format!("https://localhost{path}"))
                    .header("priority", priority)
                    .body(())
                    .unwrap();
                let mut stream = send_request.send_request(request).await.unwrap();
                stream.finish().await.unwrap();
                let response = stream.recv_response().await.unwrap();
                assert_eq!(response.status(), 200);
                let mut body = Vec::new();
                while let Some(mut chunk) = stream.recv_data().await.unwrap() {
                    while chunk.has_remaining() {
                        let part = chunk.chunk();
                        body.extend_from_slice(part);
                        let n = part.len();
                        chunk.advance(n);
                    }
                }
                assert_eq!(sha256(&body), sha256(&payload(size as u64, size)), "{path}");
            })
        })
        .collect();
    for request in requests {
        request.await.unwrap();
    }
    let (served, h3) = server.await.unwrap();
    drop(h3);
    drive.abort();

    // For every response stream, the scheduler heard its urgency and size before granting it
    // anything.
    let log = server_log.lock().unwrap();
    let log = log.events();
    for (id, urgency, size) in served {
        let first_grant = log
            .iter()
            .position(|s| matches!(s, Recorded::Grant { grant, .. } if grant.stream == id))
            .expect("the stream was granted bytes");
        let told = log[..first_grant].iter().any(|s| {
            matches!(s, Recorded::Meta(m) if m.id == id && m.urgency == urgency
                && m.size == Some(size as u64))
        });
        assert!(
            told,
            "stream {id:?}: urgency {urgency} and size {size} before its first grant"
        );
    }
}
