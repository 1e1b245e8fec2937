import DepotEngine
import Hummingbird
import NIOExtras
import ServiceLifecycle
import TOMLKit
import CSystemd
