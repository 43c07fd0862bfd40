//! The page server: unknown paths are 404s, a client that goes away mid-page does not stop
//! the next one, and every response's urgency and size reach the scheduler before its first
//! byte is scheduled.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Buf;
use mpquic_core::h3::H3Connection;
use mpquic_core::{Config, Endpoint, ServerConfig};
use mpquic_replay::{connect, har, load, self_signed, LoadError, LoadOptions, Page, PageServer};
use mpquic_sched::{RecordLog, Recorded, Recording, SchedulerKind};

/// A three-object page: a document, a stylesheet and a 3 MB image found by the document.
fn page() -> Page {
    let text = r#"{"log": {"entries": [
      {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 50, "request": {"url": "https://a.test/"},
       "_resourceType": "document",
       "response": {"status": 200, "bodySize": 30000, "content": {"mimeType": "text/html"}}},
      {"startedDateTime": "2024-01-01T00:00:00.060Z", "request": {"url": "https://a.test/s.css"},
       "_initiator": "https://a.test/",
       "response": {"status": 200, "bodySize": 12000, "content": {"mimeType": "text/css"}}},
      {"startedDateTime": "2024-01-01T00:00:00.070Z", "request": {"url": "https://a.test/big.jpg"},
       "_initiator": "https://a.test/",
       "response": {"status": 200, "bodySize": 3000000, "content": {"mimeType": "image/jpeg"}}}
    ]}}"#;
    har::parse(text, "site").unwrap()
}

/// A page server on 127.0.0.1 with `config`; returns its address, its certificate and the
/// endpoint (which the serving task also holds).
fn start_server(
    page: &Page,
    config: Config,
) -> (
    SocketAddr,
    rustls::pki_types::CertificateDer<'static>,
    Arc<Endpoint>,
) {
    let (cert, key) = self_signed().unwrap();
    let mut tls = ServerConfig::with_single_cert(vec![cert.clone()], key).unwrap();
    tls.transport_config(Arc::new(config));
    let endpoint = Arc::new(Endpoint::server(tls, "127.0.0.1:0".parse().unwrap()).unwrap());
    let addr = endpoint.local_addr().unwrap();
    let server = PageServer::new(std::slice::from_ref(page)).unwrap();
    let serving = endpoint.clone();
    tokio::spawn(async move { server.run(&serving, None).await });
    (addr, cert, endpoint)
}

/// GET `path` over h3: the status and the body.
async fn get(conn: &mpquic_core::Connection, path: &str) -> (u16, Vec<u8>) {
    let (mut driver, mut send) = h3::client::new(H3Connection::new(conn.clone()))
        .await
        .unwrap();
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let request = http::Request::get(format!("https://localhost{path}"))
        .body(())
        .unwrap();
    let mut stream = send.send_request(request).await.unwrap();
    // On loopback the server can answer, and stop reading the request, before the finish is
    // sent; finishing then fails, and the response still arrives.
    let _ = stream.finish().await;
    let response = stream.recv_response().await.unwrap();
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.unwrap() {
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    drive.abort();
    (response.status().as_u16(), body)
}

fn locals(n: usize) -> Vec<std::net::SocketAddr> {
    (0..n).map(mpquic_replay::loopback_local).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_are_404_and_known_ones_are_served_in_full() {
    let page = page();
    let (addr, cert, endpoint) = start_server(&page, Config::default());
    for path in [
        "/nope",
        "/site/a.test/missing.js",
        "/",
        "/site/a.test/s.css?x",
    ] {
        let (client, conn) = connect(Config::default(), cert.clone(), &locals(2), &[addr, addr])
            .await
            .unwrap();
        let (status, body) = get(&conn, path).await;
        assert_eq!(
            (status, body.as_slice()),
            (404, &b"not found\n"[..]),
            "{path}"
        );
        conn.close(0u32.into(), b"done");
        client.close(0u32.into(), b"");
    }
    // The same server still answers a known path in full.
    let (client, conn) = connect(Config::default(), cert, &locals(2), &[addr, addr])
        .await
        .unwrap();
    let (status, body) = get(&conn, "/site/a.test/s.css").await;
    assert_eq!((status, body.len()), (200, 12_000));
    conn.close(0u32.into(), b"done");
    client.close(0u32.into(), b"");
    endpoint.close(0u32.into(), b"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_page_does_not_stop_the_next() {
    let page = page();
    let (addr, cert, endpoint) = start_server(&page, Config::default());
    // A relay path of 25 Mbit/s makes the 3 MB image take about a second.
    let scenario = mpquic_scenario::Scenario::by_name("pb-low").unwrap();
    let relay = mpquic_netns::relay::Relay::start(
        mpquic_netns::loopback::relay_paths(scenario, &[], &[addr, addr], 0).unwrap(),
    )
    .unwrap();
    let fronts = relay.local_addrs().to_vec();

    for _ in 0..2 {
        let (client, conn) = connect(
            Config::default(),
            cert.clone(),
            &locals(fronts.len()),
            &fronts,
        )
        .await
        .unwrap();
        let options = LoadOptions {
            timeout: Duration::from_millis(300),
            ..LoadOptions::default()
        };
        let e = load(&conn, &page, &options).await.unwrap_err();
        assert!(matches!(e, LoadError::Timeout(_)), "{e}");
        // Gone mid-page: closed with the image half sent.
        conn.close(0u32.into(), b"bye");
        client.close(0u32.into(), b"");
    }
    // And once without a word: the endpoint dropped with the connection open.
    {
        let (client, conn) = connect(
            Config::default(),
            cert.clone(),
            &locals(fronts.len()),
            &fronts,
        )
        .await
        .unwrap();
        let short = LoadOptions {
            timeout: Duration::from_millis(300),
            ..LoadOptions::default()
        };
        assert!(load(&conn, &page, &short).await.is_err());
        drop(conn);
        drop(client);
    }

    let (client, conn) = connect(Config::default(), cert, &locals(fronts.len()), &fronts)
        .await
        .unwrap();
    let report = load(&conn, &page, &LoadOptions::default()).await.unwrap();
    assert_eq!(report.bytes, 3_042_000);
    assert!(report.per_path_bytes.values().all(|&b| b > 0), "{report:?}");
    conn.close(0u32.into(), b"done");
    client.close(0u32.into(), b"");
    endpoint.close(0u32.into(), b"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urgency_and_size_reach_the_scheduler_before_the_first_byte() {
    let page = page();
    let log = RecordLog::new(100_000);
    let mut config = Config::default();
    let recorder = log.clone();
    config.scheduler_factory("priority-bucket", move || {
        Box::new(Recording::new(
            SchedulerKind::PriorityBucket.build(),
            recorder.clone(),
        ))
    });
    let (addr, cert, endpoint) = start_server(&page, config);
    let (client, conn) = connect(Config::default(), cert, &locals(2), &[addr, addr])
        .await
        .unwrap();
    let report = load(&conn, &page, &LoadOptions::default()).await.unwrap();
    assert_eq!(report.bytes, page.total_bytes());
    conn.close(0u32.into(), b"done");
    client.close(0u32.into(), b"");
    endpoint.close(0u32.into(), b"");

    // Every response stream with the object's size: its urgency and size were known before
    // its first grant.
    let log = log.lock().unwrap();
    let log = log.events();
    for object in &page.objects {
        let meta = log
            .iter()
            .find_map(|s| match s {
                Recorded::Meta(m) if m.size == Some(object.size) => Some(*m),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{}: size {} never told", object.url, object.size));
        assert_eq!(meta.urgency, object.priority.urgency(), "{}", object.url);
        let told = log.iter().position(|s| *s == Recorded::Meta(meta)).unwrap();
        let granted = log
            .iter()
            .position(|s| matches!(s, Recorded::Grant { grant, .. } if grant.stream == meta.id))
            .expect("the stream was granted bytes");
        assert!(told < granted, "{}: told after its first grant", object.url);
    }
}
