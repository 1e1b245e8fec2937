import DepotEngine
import Foundation

/// A 128-bit content hash (two independent 64-bit FNV-1a variants) with the
/// size: tells files apart for "already imported" without a crypto library.
enum ContentHash {
    static func of(path: String) throws -> String {
        // Not through a link, never waiting on a FIFO, only a regular file
        // (issue #35: a FIFO or a link to /dev/zero in a watched folder hung
        // the daemon here).
        let (fd, _) = try SafeFile.openForReading(path)
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var hash = Running()
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { hash.add($0) }
        }
        return hash.text
    }

    /// The same hash of bytes in memory (a save's request, for its idempotency key).
    static func of(bytes: [UInt8]) -> String {
        var hash = Running()
        bytes.withUnsafeBytes { hash.add($0) }
        return hash.text
    }

    /// The hash of the bytes added so far.
    private struct Running {
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x84_2222_325c_bf29_ce
        var size = 0

        mutating func add(_ bytes: UnsafeRawBufferPointer) {
            size += bytes.count
            for byte in bytes {
                a = (a ^ UInt64(byte)) &* 0x100_0000_01b3
                b = (b &* 0x100_0000_01b3) ^ UInt64(byte) ^ (b >> 29)
            }
        }

        var text: String { String(a, radix: 16) + String(b, radix: 16) + "-" + String(size) }
    }
}
