//! glibc's allocator gives the free top of a heap back to the kernel as
//! soon as more than 128 KiB of it is free (`M_TRIM_THRESHOLD`) and takes
//! it again, page fault by page fault, at the next allocations. An
//! endpoint that closes a compartment frees about that much at once (two
//! match finders, model memory, states), so `sigkit bench
//! --compartment-every 10` trimmed and refaulted its heap every few
//! round trips, and with two worker threads each trim also interrupts the
//! other core (TLB shootdown). Keeping a 64 MiB pad at the top of the heap
//! (`M_TOP_PAD`, address space only: untouched pages are not resident)
//! stops that. Measured with this binary (BENCHMARKS.md, "Allocator"), the
//! Open SigComp workload on two threads: 57,420, 57,438 and 62,806 round
//! trips/s against 48,165, 51,675 and 49,315 with glibc's defaults, run
//! alternately (2.0-2.1x one thread instead of 1.7x; one thread alone is
//! unchanged). `SIGKIT_GLIBC_MALLOC_DEFAULTS=1` leaves glibc's defaults,
//! for that comparison.

/// Sets glibc's `M_TOP_PAD` to 64 MiB, unless `SIGKIT_GLIBC_MALLOC_DEFAULTS`
/// is set. Called first thing in `main`, before any thread exists.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_heap_top() {
    if std::env::var_os("SIGKIT_GLIBC_MALLOC_DEFAULTS").is_some() {
        return;
    }
    // SAFETY: mallopt(3) takes two integers and only changes a parameter of
    // the allocator's future behaviour (it locks the arenas itself, so it is
    // safe from any thread); no memory is read or written through pointers,
    // and M_TOP_PAD with a non-negative value is a documented parameter.
    // A return of 0 (not applied) leaves the defaults, which are correct,
    // only slower.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// Other platforms keep their allocator's defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_heap_top() {}
