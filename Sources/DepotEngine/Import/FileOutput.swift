import Foundation

/// Writing to file descriptors.
package enum FileOutput {
    /// Writes all of `bytes` to `fd`, retrying after interruptions.
    ///
    /// - Returns: `nil`, or why the write failed.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> String? {
        write(fd, bytes).map { String(cString: strerror($0)) }
    }

    /// Writes all of `bytes` to `fd`, retrying after interruptions.
    ///
    /// - Returns: `nil`, or the `errno` of the failed write.
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var done = 0
        while done < bytes.count {
            let n = Foundation.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return nil
    }
}
