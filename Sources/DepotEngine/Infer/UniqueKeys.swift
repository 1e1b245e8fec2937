import Foundation

/// Tells exactly which fields (or pairs, or triples) are unique over a whole
/// file, in bounded memory.
///
/// Each candidate hashes its values per row (64 bits, seeded). While it has
/// met few values, a set finds a repeated hash at once, and the candidate
/// stops; past ``setLimit`` values, hashes go to a buffer that is sorted and
/// written to a run file on disk when full, and the runs are merged at the
/// end: a repeated hash anywhere shows. A repeated hash is only a suspect
/// (two values may share a hash), so the next pass over the file compares
/// the values of the rows that have it: equal values prove a repeat; none
/// equal was a collision, and the candidate is checked again with another
/// seed. A candidate with no repeated hash is unique, exactly.
///
/// Hand-written: the product's own logic; Foundation writes the runs.
final class UniqueCandidate {
    /// The columns, in the file's order of them.
    let columns: [Int]
    let seed: UInt64
    /// A hash met twice: what the next pass verifies.
    private(set) var suspect: UInt64?
    /// Proven not unique (two rows with equal values).
    var repeated = false
    /// Set when the candidate has stopped hashing.
    var stopped: Bool { suspect != nil || repeated }
    /// Verifies a suspect on the next pass: the values of the first row
    /// with the hash, each later one compared with them.
    var kept: [[UInt8]]?
    /// How many distinct values it met before stopping: a rank for pairs.
    private(set) var distinct = 0

    private var set: Set<UInt64> = []
    private var buffer: [UInt64] = []
    private var runs: [URL] = []
    private let folder: URL
    private let chunk: Int

    static let setLimit = 65_536

    init(columns: [Int], seed: UInt64, folder: URL, chunk: Int) {
        self.columns = columns
        self.seed = seed
        self.folder = folder
        self.chunk = chunk
    }

    deinit { for r in runs { try? FileManager.default.removeItem(at: r) } }

    /// Takes one row's hash.
    func add(_ h: UInt64) throws {
        guard !stopped else { return }
        if buffer.isEmpty && runs.isEmpty {
            if !set.insert(h).inserted {
                stop(suspect: h)
                return
            }
            distinct = set.count
            if set.count >= Self.setLimit {
                buffer = Array(set)
                buffer.reserveCapacity(max(chunk, buffer.count + 1))
                set = []
            }
            return
        }
        buffer.append(h)
        distinct += 1
        if buffer.count >= chunk { try spill() }
    }

    /// Sorts the buffer, looks for a repeat in it, and writes it as a run.
    private func spill() throws {
        buffer.sort()
        if let h = Self.firstRepeat(buffer) {
            stop(suspect: h)
            return
        }
        let url = folder.appendingPathComponent("run-\(ObjectIdentifier(self).hashValue)-\(runs.count)")
        try buffer.withUnsafeBytes { try Data($0).write(to: url) }
        runs.append(url)
        buffer.removeAll(keepingCapacity: true)
    }

    private func stop(suspect h: UInt64) {
        suspect = h
        set = []
        buffer = []
        for r in runs { try? FileManager.default.removeItem(at: r) }
        runs = []
    }

    /// At the end of a pass: merges the runs; true when no hash repeats.
    func finish() throws -> Bool {
        guard !stopped else { return false }
        if runs.isEmpty { return true }
        buffer.sort()
        if let h = Self.firstRepeat(buffer) {
            stop(suspect: h)
            return false
        }
        // Each run is read a block at a time, the blocks together about one
        // buffer's worth, so that the merge's memory stays the candidate's
        // share however many runs a long file made (30M rows: hundreds).
        let block = min(65_536, max(1_024, chunk / runs.count))
        var readers = try runs.map { try RunReader(url: $0, block: block) }
        readers.append(RunReader(values: buffer))
        buffer = []
        var last: UInt64?
        while true {
            var best = -1
            for (k, r) in readers.enumerated() where r.head != nil {
                if best < 0 || r.head! < readers[best].head! { best = k }
            }
            guard best >= 0 else { break }
            let h = readers[best].head!
            if h == last {
                stop(suspect: h)
                return false
            }
            last = h
            try readers[best].advance()
        }
        for r in runs { try? FileManager.default.removeItem(at: r) }
        runs = []
        return true
    }

    static func firstRepeat(_ sorted: [UInt64]) -> UInt64? {
        var i = 1
        while i < sorted.count {
            if sorted[i] == sorted[i - 1] { return sorted[i] }
            i += 1
        }
        return nil
    }

    /// A row's hash for this candidate from its columns' hashes.
    func combine(_ hashes: UnsafeBufferPointer<UInt64>) -> UInt64 {
        // A single column's hash is its value's (hashed with this seed).
        if columns.count == 1 { return hashes[columns[0]] }
        var h = seed
        for c in columns { h = Hashing.mix(h ^ hashes[c] &* 0x9E37_79B9_7F4A_7C15) }
        return h
    }
}

/// Reads a run file's sorted hashes a block at a time.
private struct RunReader {
    private var handle: FileHandle?
    private var block: [UInt64]
    /// The hashes read at a time.
    private let size: Int
    private var index = 0
    private(set) var head: UInt64?

    init(url: URL, block size: Int) throws {
        handle = try FileHandle(forReadingFrom: url)
        block = []
        self.size = size
        try advance()
    }

    init(values: [UInt64]) {
        handle = nil
        size = 0
        block = values
        head = values.first
        index = values.isEmpty ? 0 : 1
    }

    mutating func advance() throws {
        if index < block.count {
            head = block[index]
            index += 1
            return
        }
        guard let handle, let data = try handle.read(upToCount: 8 * size), !data.isEmpty else {
            head = nil
            return
        }
        block = data.withUnsafeBytes { Array($0.bindMemory(to: UInt64.self)) }
        index = 1
        head = block[0]
    }
}

extension Hashing {
    /// 128 bits of hash as 32 hex digits: a computed `_key`.
    static func key128(_ b: UnsafeBufferPointer<UInt8>) -> String {
        let a = hash(b, seed: 0x5EED_0001), c = hash(b, seed: 0x5EED_0002)
        func padded(_ x: UInt64) -> String {
            let s = String(x, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return padded(a) + padded(c)
    }
}

/// The hashes inference uses: FNV-1a over the bytes, seeded, then
/// MurmurHash3's finalizer so that every bit of the input moves every bit.
enum Hashing {
    @inline(__always)
    static func mix(_ x: UInt64) -> UInt64 {
        var k = x
        k ^= k >> 33
        k &*= 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k &*= 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }

    @inline(__always)
    static func hash(_ b: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ seed
        var i = 0
        let n = b.count
        // Eight bytes at a time, then the tail.
        while i + 8 <= n {
            var w: UInt64 = 0
            withUnsafeMutableBytes(of: &w) {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[i..<(i + 8)]))
            }
            h = (h ^ w) &* 0x0000_0100_0000_01B3
            h ^= h >> 29
            i += 8
        }
        while i < n {
            h = (h ^ UInt64(b[i])) &* 0x0000_0100_0000_01B3
            i += 1
        }
        return mix(h ^ UInt64(n))
    }
}
