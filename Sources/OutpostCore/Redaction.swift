import Foundation
public import HTTPTypes
import HTTPTypesFoundation

/// Keeps secrets out of logs: query parameters with sensitive names are shown as `<redacted>`.
@_spi(OutpostInternal) public enum Redaction {
    /// Query parameter names whose values are never logged.
    @_spi(OutpostInternal) public static let sensitiveNames: Set<String> = [
        "access_token", "refresh_token", "id_token", "token", "code", "password", "client_secret",
        "code_verifier", "secret", "api_key", "apikey", "key", "assertion", "device_code",
    ]

    /// The request's query with sensitive values replaced, or an empty string.
    @_spi(OutpostInternal) public static func query(of request: HTTPRequest) -> String {
        guard let url = request.url, let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems else {
            return ""
        }
        return items.map { item in
            let value = sensitiveNames.contains(item.name.lowercased()) ? "<redacted>" : (item.value ?? "")
            return "\(item.name)=\(value)"
        }.joined(separator: "&")
    }
}
