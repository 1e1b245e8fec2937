import DepotClient

/// depotctl's requests go through the client library's connection
/// (DepotClient): its own HTTP code is gone (issue #14).
typealias DaemonClient = DepotClient
