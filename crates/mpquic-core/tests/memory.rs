//! What a hostile peer's chunking costs the receiver, measured by a counting allocator: the
//! heap must stay within twice the configured windows however the bytes are cut, and a peer
//! that would make it grow past that is closed with a flow-control error.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use common::raw::*;
use mpquic_core::wire::Frame;
use mpquic_core::{codes, Config, ConnectionError};

/// Counts the bytes the whole process has allocated and not yet freed.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's layout contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` or `realloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time: the counter is process-wide.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const STREAM_WINDOW: u64 = 256 * 1024;
const WINDOW: u64 = 1 << 20;

fn server_config() -> Config {
    let mut config = Config::default();
    config
        .stream_receive_window(STREAM_WINDOW)
        .unwrap()
        .receive_window(WINDOW)
        .unwrap();
    config
}

/// The live heap once it stops moving (two samples 50 ms apart within 1 KiB, at most 3 s).
async fn settled_heap() -> i64 {
    let mut last = LIVE.load(Ordering::Relaxed);
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = LIVE.load(Ordering::Relaxed);
        if (now - last).abs() < 1024 {
            return now;
        }
        last = now;
    }
    last
}

/// What the heap may grow by while a connection with these windows buffers a peer's bytes:
/// twice the connection window, plus 1 MiB for quinn's and tokio's own bookkeeping.
const ALLOWED_GROWTH: i64 = 2 * WINDOW as i64 + (1 << 20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_that_add_one_byte_each_do_not_pin_their_allocations() {
    let _serial = SERIAL.lock().await;
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: u64 = 1000;
    let server = Server::start(server_config());
    let RawSession { conn, .. } = server.raw_session().await;
    let server_conn = server.accept().await;
    let before = settled_heap().await;

    // Nothing at offset 0, so nothing is ever read: chunk k ends one byte before chunk k - 1.
    let data = vec![7u8; CHUNK];
    let mut stream = conn.open_uni().await.unwrap();
    stream.write_all(&chunks(UNI, &[])).await.unwrap();
    let top = STREAM_WINDOW - CHUNK as u64;
    for k in 0..CHUNKS {
        stream
            .write_all(&chunks_body(&[(top - k, &data)]))
            .await
            .unwrap();
    }
    let total = CHUNKS * CHUNK as u64;
    tokio::time::timeout(Duration::from_secs(60), async {
        while server_conn.paths()[0].bytes_received < total {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the server took every chunk");
    let growth = settled_heap().await - before;
    eprintln!("heap growth after {CHUNKS} one-byte additions: {growth} bytes");
    assert!(
        growth < ALLOWED_GROWTH,
        "{CHUNKS} chunks buffering {} new bytes grew the heap by {growth} bytes",
        CHUNK as u64 + CHUNKS - 1
    );
    assert!(server_conn.close_reason().is_none(), "an honest pattern");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_byte_chunks_behind_holes_are_refused_before_they_cost_twice_the_window() {
    let _serial = SERIAL.lock().await;
    let server = Server::start(server_config());
    let RawSession { conn, .. } = server.raw_session().await;
    let server_conn = server.accept().await;
    let before = settled_heap().await;

    // The heap's high-water mark while the attack lasts, sampled every millisecond.
    let sampler = tokio::spawn(async move {
        let mut peak = 0;
        loop {
            peak = peak.max(LIVE.load(Ordering::Relaxed) - before);
            if server_conn.close_reason().is_some() {
                return (peak, server_conn);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    // Four streams, each a byte at every other offset up to its window, behind a hole at 0.
    for seq in 0..4u64 {
        let Ok(mut stream) = conn.open_uni().await else {
            break;
        };
        let mut bytes = chunks(UNI + 4 * seq, &[]);
        for offset in (1..STREAM_WINDOW).step_by(2) {
            bytes.extend_from_slice(&chunks_body(&[(offset, b"x")]));
        }
        if stream.write_all(&bytes).await.is_err() {
            break;
        }
    }
    let (peak, server_conn) = tokio::time::timeout(Duration::from_secs(60), sampler)
        .await
        .expect("the server closed the connection")
        .unwrap();
    match server_conn.closed().await {
        ConnectionError::Protocol(e) => assert_eq!(e.code(), codes::FLOW_CONTROL, "{e}"),
        other => panic!("expected a flow-control error, got {other}"),
    }
    assert_eq!(close_code(&conn).await, codes::FLOW_CONTROL);
    eprintln!("peak heap growth under one-byte chunks: {peak} bytes");
    assert!(
        peak < ALLOWED_GROWTH,
        "one-byte chunks grew the heap by {peak} bytes"
    );
    server.still_serves().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_free_what_their_streams_buffered() {
    let _serial = SERIAL.lock().await;
    const BATCHES: u64 = 16;
    const PER_BATCH: u64 = WINDOW / STREAM_WINDOW;
    let server = Server::start(server_config());
    let RawSession {
        conn,
        mut control,
        mut control_recv,
        ..
    } = server.raw_session().await;
    let server_conn = server.accept().await;
    let before = settled_heap().await;
    // Batches of streams that fill the connection window behind a hole at offset 0 and are
    // then reset; the application never reads them. A peer within the rules waits for the
    // window to open again before the next batch: only resets that give back their buffered
    // bytes open it.
    let mut max_data = WINDOW;
    let data = vec![9u8; 4096];
    for batch in 0..BATCHES {
        for k in 0..PER_BATCH {
            let id = UNI + 4 * (batch * PER_BATCH + k);
            let mut stream = conn.open_uni().await.unwrap();
            let parts: Vec<(u64, &[u8])> = (1..STREAM_WINDOW / 4096)
                .map(|i| (i * 4096, &data[..]))
                .collect();
            stream.write_all(&chunks(id, &parts)).await.unwrap();
            let _ = stream.finish();
        }
        for k in 0..PER_BATCH {
            let reset = Frame::ResetStream {
                stream: UNI + 4 * (batch * PER_BATCH + k),
                code: 0,
                final_size: STREAM_WINDOW,
            };
            send_frame(&mut control, reset).await;
        }
        let needed = (batch + 2) * WINDOW;
        tokio::time::timeout(Duration::from_secs(10), async {
            while max_data < needed {
                match mpquic_core::read_frame(&mut control_recv).await.unwrap() {
                    Some(Frame::MaxData { max }) => max_data = max,
                    Some(_) => {}
                    None => panic!("the control stream ended"),
                }
            }
        })
        .await
        .expect("the resets opened the connection window");
    }
    let growth = settled_heap().await - before;
    assert!(
        server_conn.close_reason().is_none(),
        "a peer within the rules"
    );
    eprintln!(
        "heap growth after {} reset streams: {growth} bytes",
        BATCHES * PER_BATCH
    );
    assert!(
        growth < ALLOWED_GROWTH,
        "reset streams grew the heap by {growth} bytes"
    );
}

/// A session that lives for many streams, one at a time, with the default stream limits: quinn
/// keeps the state of each stream id a path has allowed, about 1 KB each, so the heap may grow
/// while the paths allow their first ids and not after. Each path allows what the streams open
/// on it need (`crates/mpquic-core/src/chunk_limit.rs`), not the 2112 the limits would permit,
/// so it stops growing within the warm-up. The warm-up also fills bounded logs such as
/// re-injection's arrival log: after 300 streams they still grew by 18-79 KB, after 900 by
/// at most 8 KB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_lived_session_keeps_what_its_open_streams_need() {
    let _serial = SERIAL.lock().await;
    const WARM_UP: u64 = 900;
    const MEASURED: u64 = 300;
    let pair = common::pair_with(2, Config::default()).await;
    common::serve_hashes(pair.server.clone());
    let mut stream = 0;
    let mut run = |count: u64| {
        let client = pair.client.clone();
        let first = stream;
        stream += count;
        async move {
            for seed in first..first + count {
                drop(
                    common::send_and_check(&client, seed, 4096 + (seed as usize % 8000) * 4).await,
                );
            }
        }
    };
    run(WARM_UP).await;
    let before = settled_heap().await;
    run(MEASURED).await;
    let growth = settled_heap().await - before;
    eprintln!("heap growth over {MEASURED} streams after {WARM_UP}: {growth} bytes");
    assert!(
        growth < 64 * 1024,
        "{MEASURED} more streams grew the heap by {growth} bytes"
    );
}
