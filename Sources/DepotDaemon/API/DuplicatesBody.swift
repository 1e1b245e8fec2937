import DepotWire
import Foundation

struct DuplicatesBody: Decodable {
    var by: [String]
    var `where`: String?
    var arguments: [String: JSONValue]?
    var limit: RequestCount?
}
