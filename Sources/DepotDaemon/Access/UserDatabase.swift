import Foundation

/// getpwuid, getpwnam and getgrnam return static buffers: one caller at a time.
enum UserDatabase {
    static let lock = NSLock()
}
