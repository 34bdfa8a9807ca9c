import Foundation
import HTTPTypes
import Hummingbird
@_spi(OutpostInternal) import OutpostCore

/// Answers in the shapes OAuth clients and browsers expect: error redirects, HTML pages.
extension OAuthRoutes {
    func problemResponse(_ problem: AuthorizationProblem) -> Response {
        switch problem {
        case .page(let message):
            return Self.html(
                HTMLPage.page(
                    title: "Sign-in stopped",
                    body: "<p class=\"error\" id=\"error\" role=\"alert\">\(HTMLPage.escape(message))</p>"),
                status: .badRequest)
        case .redirect(let code, let description, let request):
            return redirect(request, ["error": code, "error_description": description])
        }
    }

    /// Back to the client with `parameters`, the `state` and the issuer (`iss`, RFC 9207).
    func redirect(_ authorization: AuthorizationRequest, _ parameters: [String: String]) -> Response {
        var parameters = parameters
        if let state = authorization.state { parameters["state"] = state }
        parameters["iss"] = issuer()
        if authorization.responseType == "token" {
            return Self.redirect(to: authorization.redirectURI, fragment: parameters)
        }
        let separator = authorization.redirectURI.contains("?") ? "&" : "?"
        let query = URLEncodedForm.encode(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return Response(
            status: .found,
            headers: [
                .location: authorization.redirectURI + separator + query, .cacheControl: "no-store",
                .referrerPolicy: "no-referrer",
            ])
    }

    static func redirect(to uri: String, fragment parameters: [String: String]) -> Response {
        let fragment = URLEncodedForm.encode(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return Response(
            status: .found,
            headers: [.location: uri + "#" + fragment, .cacheControl: "no-store", .referrerPolicy: "no-referrer"])
    }

    /// An HTML page that no other site may frame, that sends no `Referer` to any other site (its URL
    /// carries `state` and the client's parameters), and that the browser does not cache.
    ///
    /// `same-origin` rather than `no-referrer`: under `no-referrer` Chromium posts the page's own
    /// forms with `Origin: null`, which the same-origin check could not tell from a sandboxed page.
    static func html(_ text: String, status: HTTPResponse.Status = .ok, cookies: [String?] = []) -> Response {
        var response = Response.bytes(
            Data(text.utf8), contentType: "text/html; charset=utf-8", status: status,
            headers: [
                .cacheControl: "no-store", .referrerPolicy: "same-origin", .xFrameOptions: "DENY",
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
                .xContentTypeOptions: "nosniff",
            ])
        for case let cookie? in cookies { response.headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return response
    }
}
