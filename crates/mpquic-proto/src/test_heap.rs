//! The unit tests' allocator: counts the heap bytes this thread has allocated and not freed,
//! for tests of what a structure really costs, as glibc's malloc spends them (the request
//! plus an 8-byte header, in 16-byte steps, at least 32 bytes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn cost(size: usize) -> i64 {
    ((size + 8).div_ceil(16) * 16).max(32) as i64
}

fn add(bytes: i64) {
    // During a thread's teardown the counter may be gone; nothing is measured then.
    let _ = LIVE.try_with(|live| live.set(live.get() + bytes));
}

pub(crate) fn live() -> i64 {
    LIVE.with(Cell::get)
}

struct Counting;

// SAFETY: every call is passed on to the system allocator unchanged; only a
// thread-local counter is added, which never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(cost(layout.size()));
        // SAFETY: the caller's layout contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-cost(layout.size()));
        // SAFETY: `ptr` came from this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        add(cost(size) - cost(layout.size()));
        // SAFETY: as for `dealloc`; `size` is the caller's.
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;
