import Foundation
import Synchronization

/// What every fuzz target shares: the replay of inputs in a normal build,
/// running async engine calls from libFuzzer's synchronous entry point, and
/// the way a target reports a broken invariant.
///
/// A fuzz target is a module whose entry point checks one input; the
/// executable `DepotFuzz` runs the one its first argument names. Built by
/// `scripts/fuzz` (with the sanitizers and `-DFUZZING`), libFuzzer drives
/// it; built by `swift build`, it replays files through the same entry
/// point, which is how the suite runs the kept crash inputs and the seeds as
/// regression tests:
///
/// ```sh
/// .build/debug/DepotFuzz FuzzPredicate Fuzz/Regressions/FuzzPredicate Fuzz/Seeds/FuzzPredicate
/// ```
public enum Fuzz {
    /// Runs `body` over every file named, or inside a folder named; prints
    /// how many ran. A broken invariant aborts, as under libFuzzer.
    public static func replay(_ arguments: [String], _ body: (UnsafePointer<UInt8>, Int) -> CInt) {
        var files: [String] = []
        for argument in arguments {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isFolder) else { continue }
            if isFolder.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                files += names.filter { !$0.hasPrefix(".") }.sorted().map { argument + "/" + $0 }
            } else {
                files.append(argument)
            }
        }
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            let bytes = [UInt8](data)
            _ = bytes.withUnsafeBufferPointer { buffer in
                // An empty input still needs a valid pointer.
                body(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)
            }
        }
        print("\(files.count) inputs and the generated seeds replayed clean")
    }

    /// A target's entry point, as libFuzzer calls it.
    public typealias Body = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// DepotFuzz's `main`: its first argument names the target; then, under
    /// `-DFUZZING`, libFuzzer's driver with the rest of the command line
    /// (`-max_total_time=60 CORPUS`…); else the replay of the files named on
    /// it. All six targets are one executable so that they take one build
    /// and one link (issue #52).
    ///
    /// `seeds` are a target's generated inputs (deep nesting, long chains,
    /// up to 1 MB): `DepotFuzz TARGET --write-seeds DIR` writes them as files
    /// for a corpus, and every replay runs them first.
    public static func main(targets: [String: (body: Body, seeds: [[UInt8]])]) -> Never {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let target = targets[name] else {
            // (The names joined here only: a string alive at exit() is a
            // leak to LeakSanitizer.)
            FileHandle.standardError.write(
                Data(
                    (targets.isEmpty
                        ? "DepotFuzz runs in a debug build or from scripts/fuzz, not in a release build\n"
                        : "usage: DepotFuzz TARGET [--write-seeds DIR | FILE-OR-FOLDER...] (TARGET: "
                            + targets.keys.sorted().joined(separator: ", ") + ")\n")
                        .utf8))
            exit(64)
        }
        arguments.removeFirst()
        if arguments.first == "--write-seeds", arguments.count == 2 {
            try? FileManager.default.createDirectory(atPath: arguments[1], withIntermediateDirectories: true)
            for (i, seed) in target.seeds.enumerated() {
                _ = FileManager.default.createFile(atPath: "\(arguments[1])/generated-\(i)", contents: Data(seed))
            }
            print("\(target.seeds.count) seeds written to \(arguments[1])")
            exit(0)
        }
        #if FUZZING
        // libFuzzer reads its flags and corpus folders from argv[1...]: the
        // target's name is taken out (the C strings live until exit).
        let kept = [CommandLine.arguments[0]] + arguments
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: kept.count + 1)
        for (i, argument) in kept.enumerated() { argv[i] = strdup(argument) }
        argv[kept.count] = nil
        var argc = CInt(kept.count)
        var pointer = argv
        exit(LLVMFuzzerRunDriver(&argc, &pointer, target.body))
        #else
        for seed in target.seeds {
            _ = seed.withUnsafeBufferPointer { target.body($0.baseAddress, $0.count) }
        }
        replay(arguments) { data, size in target.body(data, size) }
        exit(0)
        #endif
    }

    /// `count` copies of `text`.
    public static func repeated(_ text: String, _ count: Int) -> String { String(repeating: text, count: count) }

    /// Reports a broken invariant and aborts, so that libFuzzer keeps the input.
    public static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data(("fuzz invariant broken: " + message + "\n").utf8))
        abort()
    }

    /// Runs async work to its end from synchronous code (libFuzzer's entry point).
    public static func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let box = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            box.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0! }.get()
    }

    /// The files and folders a target made, removed when the process exits
    /// (libFuzzer's end of its run, a replay's end; not a crash, whose
    /// files may help to reproduce it): hundreds of runs had left their
    /// scratch files in /dev/shm and their stores in /tmp.
    private static let made = Mutex<Set<String>>([])
    private static let removal: Void = {
        atexit {
            for path in Fuzz.made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }()

    /// `path`, removed with what it holds when the process exits.
    public static func removeAtExit(_ path: String) {
        _ = removal
        made.withLock { _ = $0.insert(path) }
    }

    /// A folder of the target's own in the temporary folder, empty, removed at exit.
    public static func temporaryFolder(_ name: String) -> String {
        let folder = NSTemporaryDirectory() + "/depot-fuzz-\(name)-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        removeAtExit(folder)
        return folder
    }

    /// A scratch file for readers that read files: written anew for each
    /// input, removed at exit.
    public static func scratchFile(_ name: String, _ data: UnsafePointer<UInt8>, _ size: Int) -> String {
        let folder = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let path = "\(folder)/depot-fuzz-\(getpid())-\(name)"
        removeAtExit(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { fail("cannot write \(path)") }
        var done = 0
        while done < size {
            let n = write(fd, data + done, size - done)
            guard n > 0 else { fail("cannot write \(path)") }
            done += n
        }
        close(fd)
        return path
    }
}

#if FUZZING
/// libFuzzer's driver, from `libclang_rt.fuzzer_no_main` (linked by scripts/fuzz).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt
#endif
