import Synchronization

/// The configuration the control API answers by now: `SIGHUP` replaces it
/// whole, once everything a reload opens has opened (issue #35: a reload
/// left `[access]` as it was, so a revoked writer kept writing). Each
/// request reads it once, at its start.
package final class LiveSettings: Sendable {
    private let state: Mutex<DaemonConfig>

    package init(_ config: DaemonConfig) { state = Mutex(config) }

    package var current: DaemonConfig { state.withLock { $0 } }

    func replace(with config: DaemonConfig) { state.withLock { $0 = config } }
}
