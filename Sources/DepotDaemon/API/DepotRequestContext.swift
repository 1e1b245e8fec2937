import Foundation
package import Hummingbird
import NIOCore

/// Each request's context: Hummingbird's core storage plus the connection,
/// whose peer credentials decide what the client may do.
package struct DepotRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    let channel: any Channel
    var peer: Peer?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// Hummingbird's own body limit; uploads stream past it to the spool file.
    package var maxUploadSize: Int { 1 << 20 }
}
