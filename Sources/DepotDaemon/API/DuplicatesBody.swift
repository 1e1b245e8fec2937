import Foundation

struct DuplicatesBody: Decodable {
    var by: [String]
    var `where`: String?
    var arguments: [String: JSONScalar]?
    var limit: RequestCount?
}
