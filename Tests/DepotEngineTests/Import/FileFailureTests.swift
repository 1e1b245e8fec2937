import Foundation
import Testing

@testable import DepotEngine

/// Issue 52, item 5: a file Depot keeps that cannot be written is `io`
/// (`disk_full` when there is no room), never `invalid_argument`, which
/// says the request was wrong.
@Suite("Files Depot keeps: failures are io or disk_full")
struct FileFailureTests {
    @Test("no room is disk_full, saying so; another failure is io, naming the file and the system's reason")
    func ioCodes() {
        let full = DepotError.io("cannot write the rejects file /x", errno: ENOSPC)
        #expect(full.code == .diskFull && full.message.hasPrefix("the disk is full: cannot write the rejects file /x"))
        #expect(DepotError.io("cannot write /x", errno: EDQUOT).code == .diskFull)
        let other = DepotError.io("cannot write /x", errno: EACCES)
        #expect(other.code == .io && other.message == "cannot write /x: \(String(cString: strerror(EACCES)))")
    }

    @Test("a rejects file that cannot be opened or cut to its length fails with io, naming it")
    func rejectsFile() throws {
        let missing = "/nonexistent-\(UUID().uuidString)/rejects.ndjson"
        let error = #expect(throws: DepotError.self) { _ = try RejectsFile(path: missing, truncateTo: 0) }
        #expect(error?.code == .io && error?.message.contains(missing) == true, "\(String(describing: error))")
        // A file it cannot cut to the checkpoint's length (a device).
        let device = #expect(throws: DepotError.self) { _ = try RejectsFile(path: "/dev/full", truncateTo: 0) }
        #expect(device?.code == .io && device?.message.contains("/dev/full") == true)
        // A full disk is disk_full: SortedImportTests.spillOnAFullDisk, on a tmpfs.
    }
}
