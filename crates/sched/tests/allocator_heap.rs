//! The allocator never touches the heap: a counting global allocator sees no allocation
//! across thousands of calls with 1 to 32 paths.
//!
//! This file is its own test binary, so the counting allocator affects nothing else. It counts
//! only the test's own thread: the test harness's threads allocate while the test runs (CI
//! once saw 4 allocations there).

// A global allocator can only be written with `unsafe impl`; it forwards to the system one.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mpquic_sched::{allocate, AllocPath, Bandwidth, MAX_PATHS};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations count (const-initialized: reading it never allocates).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTED.try_with(Cell::get).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        }
        // SAFETY: forwarded unchanged to the system allocator, with the caller's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn allocate_makes_no_heap_allocation() {
    let paths: [AllocPath; MAX_PATHS] = std::array::from_fn(|i| AllocPath {
        one_way_delay: Duration::from_millis(1 + (i as u64 * 13) % 50),
        bandwidth: Bandwidth::from_bytes_per_sec(1e5 * (1 + i % 7) as f64).unwrap(),
        queued: (i as u64 * 7_777) % 90_000,
    });
    let mut out = [0_u64; MAX_PATHS];
    let mut checksum = 0_u64;

    COUNTED.with(|counted| counted.set(true));
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for n in 1..=MAX_PATHS {
        for size in [0, 1, 1_500, 1_000_000, u64::MAX] {
            allocate(&paths[..n], size, &mut out).unwrap();
            checksum = checksum.wrapping_add(out[0]);
        }
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    COUNTED.with(|counted| counted.set(false));

    assert_eq!(
        after - before,
        0,
        "allocate() allocated (checksum {checksum})"
    );

    // The counter does count: one boxed value is one allocation.
    COUNTED.with(|counted| counted.set(true));
    let boxed = std::hint::black_box(Box::new(checksum));
    COUNTED.with(|counted| counted.set(false));
    assert!(ALLOCATIONS.load(Ordering::SeqCst) > after, "{boxed}");
}
