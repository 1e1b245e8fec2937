import Foundation

/// A run of records handed out in identifier order that may hold more
/// records than memory: sorted ``SortedRun``s of `memoryRows` each are
/// spilled to a temporary file, and merged when the run is handed out.
///
/// Why: a run visits the identifier index's pages in order, once each, so
/// the index costs an import about one sweep per run (BENCHMARKS.md,
/// "Imports at scale"). With runs of 64k records, as memory allows, a 5M
/// import sweeps an index of ~78k leaf pages 76 times, and every commit of a
/// save writes the pages its runs dirtied: a save that ends early (for a
/// waiting save) costs a sweep more. A merged run of 1M records sweeps the
/// index once for sixteen times the records, and the saves that end inside
/// it write disjoint parts of the index: ending a save early costs little.
///
/// The merge is stable: equal identifiers come in the input's order (the
/// sorted parts are consecutive pieces of the input, and a tie goes to the
/// earlier part), so the rows come in the order one stable sort of the whole
/// run gives, whatever `memoryRows` is — which a job resumed inside the run
/// relies on (``skip(_:)``). A run of at most `memoryRows` records is sorted
/// in memory and never touches the file.
///
/// Written by hand: an external merge sort over SortedRun's packed rows;
/// no library here sorts packed records on disk.
struct MergedRun {
    let columns: [String]
    /// The records the run was read to hold (its chunks carry it).
    let length: Int
    private let identifier: [String]?
    private let memoryRows: Int
    private let folder: String
    /// The part being read, or (with no part spilled) the whole run.
    private var current: SortedRun
    private var file: SpillFile?
    private var parts: [SpillFile.Part] = []
    private var merger: RunMerger?
    private var handedOut = 0
    private var rejects: [RejectsFile.Entry] = []
    private var spilledRead = 0
    private var end: ParsedBatch?

    /// - Parameters:
    ///   - memoryRows: records sorted in memory at a time.
    ///   - folder: where the spilled parts' temporary file is made (and
    ///     unlinked at once: nothing is left behind, even after a kill).
    init(columns: [String], identifier: [String]?, length: Int, memoryRows: Int, folder: String) {
        self.columns = columns
        self.length = length
        self.identifier = identifier
        self.memoryRows = max(1, memoryRows)
        self.folder = folder
        current = SortedRun(columns: columns, identifier: identifier, expectedRows: self.memoryRows)
    }

    /// Records read into the run, good or bad.
    var read: Int { spilledRead + current.read }

    /// Adds a parsed chunk; first spills the part in memory if it holds
    /// `memoryRows` records (so a run of no more never touches the file).
    ///
    /// - Throws: ``DepotError/Code/diskFull`` or ``DepotError/Code/io`` when
    ///   the temporary file cannot be written.
    mutating func append(_ parsed: ParsedBatch) throws {
        if current.count >= memoryRows { try spillCurrent() }
        current.append(parsed)
    }

    private mutating func spillCurrent() throws {
        let file = try self.file ?? SpillFile(folder: folder)
        self.file = file
        current.sort()
        let start = file.length
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20 + 4096)
        try current.spill(into: &out) { try file.append(&$0) }
        try file.append(&out)
        parts.append(SpillFile.Part(start: start, end: file.length))
        rejects += current.rejects
        spilledRead += current.read
        if let place = current.end { end = place }
        current = SortedRun(columns: columns, identifier: identifier, expectedRows: memoryRows)
    }

    /// Puts the rows in order: the run in memory sorted, or its last part
    /// spilled and the parts' merge begun.
    mutating func sort() throws {
        guard !parts.isEmpty else { return current.sort() }
        if current.count > 0 { try spillCurrent() }
        rejects += current.rejects
        spilledRead += current.read
        if let place = current.end { end = place }
        current = SortedRun(columns: columns, identifier: identifier, expectedRows: 0)
        merger = try RunMerger(file: file!, parts: parts, columns: columns, identifier: identifier)
    }

    /// Skips the first `rows` of the sorted order (see ``SortedRun/skip(_:)``).
    mutating func skip(_ rows: Int) throws {
        guard let merger else { return current.skip(rows) }
        handedOut = try merger.skip(rows)
    }

    /// Whether rows remain to be handed out.
    var hasMore: Bool { merger == nil ? current.hasMore : end != nil }

    /// The next (at most) `max` rows in order, as ``SortedRun/nextChunk(max:)``.
    mutating func nextChunk(max: Int) throws -> ParsedBatch {
        var chunk = try take(max)
        chunk.runLength = length
        return chunk
    }

    private mutating func take(_ max: Int) throws -> ParsedBatch {
        guard let merger else { return current.nextChunk(max: max) }
        var batch = RecordBatch(entity: end?.batch.entity ?? "", columns: columns, reservingCapacity: max)
        var lines: [Int] = []
        lines.reserveCapacity(max)
        let taken = try merger.next(max, into: &batch, lines: &lines)
        handedOut += taken
        let last = merger.hasMore ? nil : end
        if last != nil {
            // The run is handed out: its file goes.
            end = nil
            file = nil
            self.merger = nil
        }
        return SortedRun.chunk(batch, lines: lines, handedOut: handedOut, last: last, rejects: rejects, read: read)
    }
}

/// An unlinked temporary file that a merged run spills its sorted parts to.
final class SpillFile {
    /// A sorted part's bytes in the file.
    struct Part {
        var start: Int64
        var end: Int64
    }

    let fd: Int32
    private(set) var length: Int64 = 0
    private let folder: String

    init(folder: String) throws {
        self.folder = folder
        var template = Array((folder + "/.depot-sort-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw DepotError(
                .io,
                "cannot make a temporary file in \(folder) to sort the import's records: "
                    + String(cString: strerror(errno)))
        }
        // Unlinked at once: its space goes back when it is closed, or when the process dies.
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        self.fd = fd
    }

    deinit { close(fd) }

    /// Writes `bytes` at the file's end and empties them.
    func append(_ bytes: inout [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(length) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    let full = errno == ENOSPC || errno == EDQUOT
                    throw DepotError(
                        full ? .diskFull : .io,
                        (full ? "the disk is full: " : "")
                            + "cannot write the temporary file in \(folder) that sorts the import's records "
                            + "(\(String(cString: strerror(errno)))); the import needs room there for about two runs "
                            + "of its records, packed, and resumes from its last save once there is")
                }
                done += n
            }
        }
        length += Int64(bytes.count)
        bytes.removeAll(keepingCapacity: true)
    }

    /// Reads up to `count` bytes at `offset` into `buffer` from `at`; the bytes read.
    func read(at offset: Int64, count: Int, into buffer: inout [UInt8], at: Int) throws -> Int {
        try buffer.withUnsafeMutableBytes { raw in
            while true {
                let n = pread(fd, raw.baseAddress! + at, count, off_t(offset))
                if n >= 0 { return n }
                if errno == EINTR { continue }
                throw DepotError(
                    .io,
                    "cannot read the temporary file in \(folder) that sorts the import's records: "
                        + String(cString: strerror(errno)))
            }
        }
    }
}

/// The k-way merge of a merged run's sorted parts: a heap of one cursor
/// per part, ordered by the identifier of its current row, a tie going to
/// the earlier part (the input's order).
final class RunMerger {
    /// A part being read: a buffer of its bytes, and its current row.
    private final class Cursor {
        var next: Int64
        let end: Int64
        var buffer: [UInt8]
        /// The buffered bytes: `buffer[low..<high]`.
        var low = 0
        var high = 0
        /// The current row's values start at `row`, its identifier's at `keys`.
        var row = 0
        var rowEnd = 0
        var line = 0
        var keys: [Int]

        init(_ part: SpillFile.Part, keys: Int) {
            next = part.start
            end = part.end
            buffer = [UInt8](repeating: 0, count: Int(min(1 << 16, part.end - part.start)))
            self.keys = [Int](repeating: 0, count: keys)
        }
    }

    private let file: SpillFile
    private let width: Int
    private let identifier: [Int]
    private var cursors: [Cursor] = []
    /// The cursors with a current row, as a binary heap.
    private var heap: [Int] = []

    init(file: SpillFile, parts: [SpillFile.Part], columns: [String], identifier: [String]?) throws {
        self.file = file
        width = columns.count
        let positions = identifier.map { $0.compactMap { columns.firstIndex(of: $0) } } ?? []
        self.identifier = positions.count == identifier?.count ? positions : []
        for part in parts {
            let cursor = Cursor(part, keys: self.identifier.count)
            cursors.append(cursor)
            if try advance(cursor) { push(cursors.count - 1) }
        }
    }

    var hasMore: Bool { !heap.isEmpty }

    /// Moves `cursor` to its next row; false at its part's end.
    private func advance(_ c: Cursor) throws -> Bool {
        c.low = c.rowEnd
        // A row's two lengths fit in 20 bytes; then the row itself.
        guard try fill(c, 20) else { return false }
        let (size, afterSize) = c.buffer.withUnsafeBufferPointer { SortedRun.length($0, c.low) }
        let (line, afterLine) = c.buffer.withUnsafeBufferPointer { SortedRun.length($0, afterSize) }
        let header = afterLine - c.low
        guard try fill(c, header + size), c.high - c.low >= header + size else {
            throw DepotError(.io, "the temporary file that sorts the import's records ends inside a record")
        }
        c.line = line
        c.row = c.low + header
        c.rowEnd = c.row + size
        if !identifier.isEmpty {
            c.buffer.withUnsafeBufferPointer { buf in
                var at = c.row
                var k = 0
                for column in 0..<width {
                    if let j = identifier.firstIndex(of: column) {
                        c.keys[j] = at
                        k += 1
                        if k == identifier.count { break }
                    }
                    at = SortedRun.skip(buf, at)
                }
            }
        }
        return true
    }

    /// Makes `count` bytes from `low` buffered, as far as the part has
    /// them; false when the part has no byte left.
    private func fill(_ c: Cursor, _ count: Int) throws -> Bool {
        if c.high - c.low >= count { return true }
        // Keep the unread bytes, at the buffer's start.
        if c.low > 0 {
            c.buffer.withUnsafeMutableBytes { raw in
                _ = memmove(raw.baseAddress!, raw.baseAddress! + c.low, c.high - c.low)
            }
            c.rowEnd -= c.low
            c.row -= c.low
            c.high -= c.low
            c.low = 0
        }
        if c.buffer.count < count { c.buffer += [UInt8](repeating: 0, count: count - c.buffer.count) }
        while c.high < count, c.next < c.end {
            let want = min(c.buffer.count - c.high, Int(c.end - c.next))
            let n = try file.read(at: c.next, count: want, into: &c.buffer, at: c.high)
            guard n > 0 else {
                throw DepotError(.io, "the temporary file that sorts the import's records is shorter than written")
            }
            c.high += n
            c.next += Int64(n)
        }
        return c.high > c.low
    }

    /// Whether cursor `a`'s row comes before cursor `b`'s.
    private func before(_ a: Int, _ b: Int) -> Bool {
        let ca = cursors[a], cb = cursors[b]
        for j in 0..<identifier.count {
            let c = ca.buffer.withUnsafeBufferPointer { bufA in
                cb.buffer.withUnsafeBufferPointer { bufB in SortedRun.compare(bufA, ca.keys[j], bufB, cb.keys[j]) }
            }
            if c != 0 { return c < 0 }
        }
        return a < b
    }

    private func push(_ i: Int) {
        heap.append(i)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// The cursor at the top moved on (or ran out): restores the heap.
    private func settleTop() throws {
        if !(try advance(cursors[heap[0]])) {
            heap.swapAt(0, heap.count - 1)
            heap.removeLast()
        }
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, before(heap[left], heap[first]) { first = left }
            if right < heap.count, before(heap[right], heap[first]) { first = right }
            if first == parent { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }

    /// Appends the next (at most) `max` rows, unpacked, to `batch` and their
    /// lines to `lines`; the rows taken.
    func next(_ max: Int, into batch: inout RecordBatch, lines: inout [Int]) throws -> Int {
        var row: [Value] = []
        row.reserveCapacity(width)
        var taken = 0
        while taken < max, let top = heap.first {
            let c = cursors[top]
            row.removeAll(keepingCapacity: true)
            c.buffer.withUnsafeBufferPointer { buf in
                var at = c.row
                for _ in 0..<width { row.append(SortedRun.unpack(buf, &at)) }
            }
            batch.append(row)
            lines.append(c.line)
            taken += 1
            try settleTop()
        }
        return taken
    }

    /// Passes over the next `rows` rows; the rows passed.
    func skip(_ rows: Int) throws -> Int {
        var passed = 0
        while passed < rows, !heap.isEmpty {
            passed += 1
            try settleTop()
        }
        return passed
    }
}
