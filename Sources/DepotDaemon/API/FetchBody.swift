import DepotEngine
import DepotWire
import Foundation

/// The body of a fetch.
extension FetchBody {
    func descriptor(entity: String) throws -> FetchDescriptor {
        var nulls: DepotEngine.SortDescriptor.NullsOrder?
        if let n = self.nulls {
            guard let order = DepotEngine.SortDescriptor.NullsOrder(rawValue: n) else {
                throw APIError(.invalidArgument, "nulls must be first or last")
            }
            nulls = order
        }
        var descriptor = FetchDescriptor(
            entity: entity, where: self.where, arguments: try JSONValue.scalars(arguments, key: "arguments"),
            sort: (sort ?? []).map { DepotEngine.SortDescriptor(parsing: $0, nulls: nulls) }, limit: limit,
            offset: offset, fields: fields, sectionBy: sectionBy)
        descriptor.prefetch = prefetch ?? []
        descriptor.computed = (computed ?? []).map { ComputedField($0.name, $0.expression) }
        if let after {
            descriptor.after = try after.enumerated().map { k, value in
                guard let scalar = value.scalar else {
                    throw APIError(.invalidArgument, "\"after\"[\(k)] must be a string, number, boolean or null")
                }
                return scalar
            }
        }
        if let identifiers {
            guard identifiers.count <= FetchDescriptor.maxIdentifiers else {
                throw APIError(
                    .invalidArgument,
                    "identifiers lists at most \(FetchDescriptor.maxIdentifiers) records, not \(identifiers.count)")
            }
            descriptor.identifiers = try identifiers.enumerated().map { k, value in
                let parts: [JSONValue] = if case .array(let values) = value { values } else { [value] }
                return try parts.map { part in
                    guard let scalar = part.scalar else {
                        throw APIError(
                            .invalidArgument,
                            "\"identifiers\"[\(k)] must be a value, or an array of a compound identifier's values")
                    }
                    return scalar
                }
            }
        }
        return descriptor
    }
}
