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
        var a: UInt64 = 0xcbf2_9ce4_8422_2325
        var b: UInt64 = 0x84_2222_325c_bf29_ce
        var size = 0
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            size += chunk.count
            chunk.withUnsafeBytes { bytes in
                for byte in bytes {
                    a = (a ^ UInt64(byte)) &* 0x100_0000_01b3
                    b = (b &* 0x100_0000_01b3) ^ UInt64(byte) ^ (b >> 29)
                }
            }
        }
        return String(a, radix: 16) + String(b, radix: 16) + "-" + String(size)
    }
}
