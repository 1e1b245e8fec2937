// Built for testing only: in a debug build (the suite replays the kept
// inputs through it) or by scripts/fuzz (-enable-testing -DFUZZING). A plain
// release build (`swift build -c release`, which builds every target) compiles
// it empty (DepotFuzz then says so), since @testable imports need modules compiled for testing:
// that is what made release builds of a fresh clone fail (issue #13).
#if DEBUG || FUZZING
@testable import DepotDaemon
import DepotEngine
public import FuzzSupport

/// Any text read as depotd's configuration: either a configuration whose
/// every number, duration and size lies in its range, or problems that each
/// name their key. A trap (an overflow, a conversion) is a finding.
func fuzzConfig(_ input: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data = input else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let config = try DaemonConfig.parse(text, file: "/fuzz/depot.toml")
        if !DurationText.idleTimeout.contains(config.idleTimeout) { Fuzz.fail("idle_timeout out of range") }
        if config.maxRequestBytes < 1024 || config.maxUploadBytes < 1 { Fuzz.fail("a size out of range") }
        if config.socketMode > 0o777 { Fuzz.fail("socket_mode out of range") }
        for store in config.stores {
            if !DurationText.saveInterval.contains(store.saveInterval) { Fuzz.fail("save_interval out of range") }
            if let r = store.historyRetention, !DurationText.retention.contains(r) {
                Fuzz.fail("history_retention out of range")
            }
            if store.saveEvery < 1 || store.writerCacheBytes < 1 << 20 { Fuzz.fail("a store number out of range") }
        }
    } catch let problems as DaemonConfig.Problems {
        if problems.problems.isEmpty { Fuzz.fail("problems without a problem") }
        for p in problems.problems where !p.contains(":") { Fuzz.fail("a problem that names no key: \(p)") }
    } catch {
        Fuzz.fail("not a configuration problem: \(error)")
    }
    return 0
}

/// The target as `DepotFuzz FuzzConfig` runs it.
public enum FuzzConfigEntry {

    /// Deep nesting and out-of-range values.
    public static let seeds: [[UInt8]] = [
        "a = " + Fuzz.repeated("[", 100_000) + Fuzz.repeated("]", 100_000),
        "a = " + Fuzz.repeated("{b = ", 10_000) + "1" + Fuzz.repeated("}", 10_000),
        Fuzz.repeated("[x]\n", 50_000),
        "[daemon]\nidle_timeout = \"1e300s\"\nmax_request_bytes = -1\nsocket_mode = \"+777\"\n"
            + "[[store]]\nname = \"s\"\nsave_interval = \"1e300s\"\nhistory_retention = \"99999999999999d\"\n"
            + "cache_mb = 9223372036854775807\nsave_every = 0\n"
    ].map { Array($0.utf8) }
    public static let body: Fuzz.Body = fuzzConfig
}

#endif
