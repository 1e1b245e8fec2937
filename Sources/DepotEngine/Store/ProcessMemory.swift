import CDepotSQLite

/// Process-wide memory settings for a program that runs long imports (depotd,
/// the benchmarks). A library does not change them on its own.
public enum ProcessMemory {
    /// Makes freed buffers of 4 MiB and more go back to the system at once.
    ///
    /// An import's parsed chunks and sorted runs are such buffers; glibc's
    /// moving threshold would keep them in the heap after the first is
    /// freed, adding tens of MB to a long import's peak RSS (bench/run-import).
    ///
    /// ```swift
    /// ProcessMemory.returnLargeBuffers()
    /// ```
    public static func returnLargeBuffers() {
        _ = depot_set_mmap_threshold(4 << 20)
    }
}
