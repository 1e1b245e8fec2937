import Foundation

/// What a request needs.
package enum Role: String, Sendable {
    case read, write
}
