/// The keys of the daemon's log metadata, one place for all: each is a
/// field of the journal entry (`journalctl -u depot JOB_ID=j…`), so a key
/// is part of what users script against.
package enum LogKey {
    package static let action = "ACTION"
    package static let changes = "CHANGES"
    package static let consumer = "CONSUMER"
    package static let entity = "ENTITY"
    package static let errno = "ERRNO"
    package static let error = "ERROR"
    package static let fd = "FD"
    package static let group = "GROUP"
    package static let hard = "HARD"
    package static let jobID = "JOB_ID"
    package static let maxConnections = "MAX_CONNECTIONS"
    package static let method = "METHOD"
    package static let mode = "MODE"
    package static let nofile = "NOFILE"
    package static let part = "PART"
    package static let path = "PATH"
    package static let pruned = "PRUNED"
    package static let reason = "REASON"
    package static let setting = "SETTING"
    package static let state = "STATE"
    package static let store = "STORE"
    package static let timeout = "TIMEOUT"
    package static let token = "TOKEN"
    package static let uid = "UID"
}
