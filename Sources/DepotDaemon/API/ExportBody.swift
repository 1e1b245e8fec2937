import DepotEngine
import DepotWire
import Foundation

/// The body of a streamed export (`POST .../export`).
extension ExportBody {
    func descriptor(entity: String) throws -> FetchDescriptor {
        if let prefetch, !prefetch.isEmpty {
            throw APIError(
                .invalidArgument,
                "a streamed export writes each record as it is stored; to embed related "
                    + "records, run an export job: POST /v1/jobs {\"kind\": \"export\", \"prefetch\": [...]}")
        }
        return FetchDescriptor(
            entity: entity, where: self.where, arguments: try JSONValue.scalars(arguments, key: "arguments"),
            fields: fields)
    }

    func recordFormat() throws -> RecordFormat {
        guard let format else { return .ndjson }
        guard let f = RecordFormat(rawValue: format) else {
            throw APIError(.invalidArgument, "format must be csv or ndjson, not \(JSONText.quoted(format))")
        }
        return f
    }
}
