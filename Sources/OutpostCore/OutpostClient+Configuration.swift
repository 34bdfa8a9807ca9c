public import Foundation
public import HTTPTypes
public import Logging
public import Tracing

extension OutpostClient {
    /// Everything a client needs to know about its backend. Every field has a default but the base URL.
    public struct Configuration: Sendable {
        /// The backend's root, e.g. `https://api.example.com/v1`. Request paths are appended to it.
        public var baseURL: URL
        /// The longest one attempt may take, from sending the request to the last byte of the body
        /// (a server that stalls or trickles its body fails with ``OutpostError/Code/timeout``).
        /// Default: 10 seconds.
        public var timeout: Duration
        /// Header fields sent with every request (a request's own fields win).
        public var defaultHeaders: HTTPFields
        /// Sent as `User-Agent`. Default: `Outpost/<version> (Swift)`.
        public var userAgent: String
        /// Encodes request bodies.
        public var encoder: JSONEncoder
        /// Decodes response bodies.
        public var decoder: JSONDecoder
        /// Receives request logs and failures at `debug`, retries at `info`; never above `info`, as
        /// the caller gets every failure as an error. Default: discards everything.
        public var logger: Logger
        /// When to try again. Default: ``RetryPolicy/init(maxAttempts:baseDelay:maxDelay:maxRetryAfter:retryableStatuses:sleep:random:)``.
        public var retry: RetryPolicy
        /// How the backend writes errors.
        public var errorFormat: ErrorFormat
        /// Larger response bodies fail with ``OutpostError/Code/responseTooLarge``. Default: 32 MiB.
        public var maxResponseBytes: Int
        /// The tracer of the client's spans: one per call and one per attempt, whose context goes
        /// out in the attempt's headers (`traceparent` with a W3C propagator). Default `nil`: the
        /// process's (`InstrumentationSystem.tracer`); while that is the no-op tracer, the client
        /// makes no span and adds no header.
        public var tracer: (any Tracer)? = nil

        public init(
            baseURL: URL,
            timeout: Duration = .seconds(10),
            defaultHeaders: HTTPFields = [:],
            userAgent: String = "Outpost/\(OutpostVersion.string) (Swift)",
            encoder: JSONEncoder = JSONEncoder(),
            decoder: JSONDecoder = JSONDecoder(),
            logger: Logger = Logger(label: "outpost.client", factory: { _ in SwiftLogNoOpLogHandler() }),
            retry: RetryPolicy = RetryPolicy(),
            errorFormat: ErrorFormat = .outpost,
            maxResponseBytes: Int = 32 * 1024 * 1024
        ) {
            self.baseURL = baseURL
            self.timeout = timeout
            self.defaultHeaders = defaultHeaders
            self.userAgent = userAgent
            self.encoder = encoder
            self.decoder = decoder
            self.logger = logger
            self.retry = retry
            self.errorFormat = errorFormat
            self.maxResponseBytes = maxResponseBytes
        }
    }

    /// How a backend writes its errors, in error responses and, NationBuilder style, inside 2xx bodies.
    ///
    /// When an error response has nothing where the format looks, the client still reads the common
    /// shapes: the Outpost envelope, OAuth's `{"error", "error_description"}`, a top-level `detail` or
    /// `message`, and a Django REST framework field map (`{"title": ["This field may not be blank."]}`).
    public struct ErrorFormat: Sendable {
        /// Where validation errors sit, as a map from field name to messages.
        public enum FieldErrors: Sendable, Hashable {
            /// Nowhere (the common shapes are still recognized when nothing else was found).
            case none
            /// Under a top-level key: `{"errors": {"title": ["..."]}}`.
            case key(String)
            /// The body itself is the map, Django REST framework style: every top-level key but the code
            /// and message keys is a field (`{"title": ["..."], "non_field_errors": ["..."]}`).
            case topLevel
        }

        /// The key that wraps the error object (`{"error": {...}}`), or `nil` when the code and message
        /// sit at the top level (`{"code": ..., "message": ...}`).
        public var envelopeKey: String?
        public var codeKey: String
        public var messageKeys: [String]
        public var detailsKey: String
        /// Top-level keys that, present and not null in a 2xx JSON object, mean the call failed.
        /// Empty: a 2xx is always a success.
        public var serviceErrorKeys: [String]
        /// Where validation errors by field sit; they end up in ``OutpostError/fieldErrors``.
        public var fieldErrors: FieldErrors

        public init(
            envelopeKey: String? = "error", codeKey: String = "code", messageKeys: [String] = ["message"],
            detailsKey: String = "details", serviceErrorKeys: [String] = ["error"], fieldErrors: FieldErrors = .none
        ) {
            self.envelopeKey = envelopeKey
            self.codeKey = codeKey
            self.messageKeys = messageKeys
            self.detailsKey = detailsKey
            self.serviceErrorKeys = serviceErrorKeys
            self.fieldErrors = fieldErrors
        }

        /// The Outpost server's `{"error": {"code", "message", "details"}}`.
        public static let outpost = ErrorFormat()

        /// Django REST framework style: `{"detail": "..."}`, or a field map as the whole body
        /// (`{"title": ["This field may not be blank."], "non_field_errors": [...]}`).
        public static let restFramework = ErrorFormat(
            envelopeKey: nil, codeKey: "code", messageKeys: ["detail", "message"], detailsKey: "errors",
            serviceErrorKeys: [], fieldErrors: .topLevel)

        /// NationBuilder style: `{"code": "...", "message": "...", "validation_errors": [...]}`, and
        /// errors inside 2xx bodies under `error`.
        public static let nationBuilder = ErrorFormat(
            envelopeKey: nil, codeKey: "code", messageKeys: ["message", "description"],
            detailsKey: "validation_errors", serviceErrorKeys: ["error", "errors"])
    }
}

/// The version of this library, as sent in the `User-Agent`.
public enum OutpostVersion {
    public static let string = "0.1.0"
}
