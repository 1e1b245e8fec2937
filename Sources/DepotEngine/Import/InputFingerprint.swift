import Foundation

/// What identifies an input's content cheaply: its size, its modification
/// time and a hash of its first 64 KiB.
struct InputFingerprint: Codable, Sendable, Hashable {
    var size: Int64
    var modified: Int64
    var headHash: UInt64

    init(path: String) throws {
        let file = try InputFile(path: path)
        size = file.size
        modified = file.modified
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { buffer.deallocate() }
        var total = 0
        while total < buffer.count {
            let n = try file.read(into: buffer.baseAddress! + total, count: buffer.count - total)
            if n == 0 { break }
            total += n
        }
        for byte in buffer[0..<total] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        headHash = hash
    }
}
