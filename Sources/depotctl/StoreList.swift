import Foundation

/// `GET /v1/stores`.
struct StoreList: Decodable {
    struct Store: Decodable {
        struct Entity: Decodable {
            struct Field: Decodable { var name: String; var type: String }
            var name: String
            var count: Int
            var identifier: [String]
            var fields: [Field]
        }
        var name: String
        var path: String
        var token: String?
        var entities: [Entity]
    }
    var stores: [Store]
}
