import Foundation

/// Who may read or write, as the `[access]` section names them:
/// `uid:N`, `user:NAME` or `group:NAME`.
package enum Principal: Sendable, Hashable, CustomStringConvertible {
    case uid(UInt32)
    case user(String)
    case group(String)

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    package init(parsing text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw Invalid(
                description: "\(text.debugDescription) is not a principal; write uid:N, user:NAME or group:NAME")
        }
        switch parts[0] {
        case "uid":
            guard let n = UInt32(parts[1]) else {
                throw Invalid(description: "\(text.debugDescription): uid must be a number")
            }
            self = .uid(n)
        case "user": self = .user(parts[1])
        case "group": self = .group(parts[1])
        default:
            throw Invalid(
                description: "\(text.debugDescription) is not a principal; write uid:N, user:NAME or group:NAME")
        }
    }

    package var description: String {
        switch self {
        case .uid(let n): "uid:\(n)"
        case .user(let name): "user:\(name)"
        case .group(let name): "group:\(name)"
        }
    }
}
