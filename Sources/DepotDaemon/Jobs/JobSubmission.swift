import DepotEngine
import DepotWire

/// The body of `POST /v1/jobs` (``JobRequest``), its settings read into a
/// ``JobSpec``.
struct JobSubmission: Decodable {
    var store: String
    var spec: JobSpec

    init(from decoder: any Decoder) throws {
        let request = try JobRequest(from: decoder)
        let kind = try JobRecord.Kind.read(request.kind)
        store = request.store
        spec = try JobSpec(kind: kind, entity: request.entity, settings: request.settings)
    }
}
