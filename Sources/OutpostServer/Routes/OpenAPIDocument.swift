/// The OpenAPI 3.1 description of every route, served at `GET /openapi.json`.
///
/// A test compares it with the router's routes: a route missing here fails the build.
enum OpenAPIDocument {
    static let json = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "Outpost reference server",
            "version": "0.1.0",
            "description": "JSON over HTTP. Every failure is {\"error\": {\"code\", \"message\", \"details\"}} with a proper status. HEAD works wherever GET does (same headers, no body); a method a path does not take is 405 with Allow. Any request may be 400 (malformed_request, json_too_deep), 405, 408 (request_timeout: head or body too slow) or 503 (storage_busy, with Retry-After). See docs/PROTOCOL.md."
          },
          "paths": {
            "/health": {
              "get": {
                "summary": "Liveness and database check",
                "responses": {
                  "200": {"description": "Healthy", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}},
                  "503": {"description": "The database does not answer"}
                }
              }
            },
            "/openapi.json": {
              "get": {
                "summary": "This document",
                "responses": {"200": {"description": "The OpenAPI document"}}
              }
            },
            "/.well-known/openid-configuration": {
              "get": {"summary": "OpenID Provider metadata (OpenID Connect Discovery 1.0)", "responses": {"200": {"description": "The metadata"}}}
            },
            "/.well-known/jwks.json": {
              "get": {
                "summary": "The keys that sign ID tokens (RFC 7517): the key in use and keys retired within the grace period",
                "responses": {"200": {"description": "A JSON Web Key Set", "content": {"application/json": {"schema": {"type": "object", "required": ["keys"], "properties": {"keys": {"type": "array", "items": {"type": "object"}}}}}}}}
              }
            },
            "/userinfo": {
              "get": {
                "summary": "OpenID Connect UserInfo: sub, and preferred_username with the profile scope",
                "security": [{"bearer": []}],
                "responses": {"200": {"description": "The user's claims"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              },
              "post": {
                "summary": "OpenID Connect UserInfo (the access token may also come as access_token in a form body)",
                "security": [{"bearer": []}],
                "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"access_token": {"type": "string", "minLength": 1}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"200": {"description": "The user's claims"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/lambdas/{name}": {
              "post": {
                "summary": "Call a remote function",
                "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}}, {"$ref": "#/components/parameters/IdempotencyKey"}],
                "security": [{}, {"bearer": []}],
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/LambdaCall"}}}},
                "responses": {
                  "200": {"description": "The result", "headers": {"Idempotency-Replayed": {"description": "true when this answer repeats the first one for the Idempotency-Key", "schema": {"type": "string", "enum": ["true"]}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LambdaResult"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/IdempotencyInProgress"},
                  "413": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"},
                  "500": {"$ref": "#/components/responses/Error"},
                  "504": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/handlers/{name}": {
              "post": {
                "summary": "Call a custom handler: any JSON in and out",
                "parameters": [{"name": "name", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}}, {"$ref": "#/components/parameters/IdempotencyKey"}],
                "security": [{}, {"bearer": []}],
                "requestBody": {"content": {"application/json": {"schema": {}}}},
                "responses": {
                  "200": {"description": "Whatever the handler answers", "headers": {"Idempotency-Replayed": {"description": "true when this answer repeats the first one for the Idempotency-Key", "schema": {"type": "string", "enum": ["true"]}}}, "content": {"application/json": {"schema": {}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/IdempotencyInProgress"},
                  "422": {"$ref": "#/components/responses/Error"},
                  "500": {"$ref": "#/components/responses/Error"},
                  "504": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/users": {
              "post": {
                "summary": "Sign up with a username and password (stored with Bcrypt)",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["username", "password"], "properties": {"username": {"type": "string", "pattern": "^[A-Za-z0-9._@-]{3,64}$"}, "password": {"type": "string", "minLength": 8}}}}}},
                "responses": {"201": {"description": "The new user's id and username"}, "400": {"$ref": "#/components/responses/Error"}, "408": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "429": {"description": "Too many sign-ups from this address; see Retry-After", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "503": {"$ref": "#/components/responses/Busy"}}
              }
            },
            "/me": {
              "get": {
                "summary": "The signed-in user (Authorization: Bearer with the profile scope; a token in the query is refused)",
                "security": [{"bearer": ["profile"]}],
                "responses": {"200": {"description": "id, username, entitlements, client_id, scope"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/auth/login": {
              "post": {
                "summary": "Sign in through a custom authentication provider",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["provider", "auth_data", "client_id"], "properties": {"provider": {"type": "string", "minLength": 1}, "auth_data": {"type": "object"}, "client_id": {"type": "string", "minLength": 1}}}}}},
                "responses": {"200": {"$ref": "#/components/responses/Tokens"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"description": "invalid_client (an unknown client_id) or provider_rejected", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "unknown_provider: the server has no provider of that name", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "429": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/.well-known/oauth-authorization-server": {
              "get": {"summary": "Authorization server metadata (RFC 8414)", "responses": {"200": {"description": "The metadata"}}}
            },
            "/oauth/authorize": {
              "get": {
                "summary": "The sign-in and consent page (authorization code with PKCE S256, or implicit for clients allowed it)",
                "parameters": [
                  {"name": "response_type", "in": "query", "required": true, "schema": {"type": "string", "enum": ["code", "token"]}},
                  {"name": "client_id", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1}},
                  {"name": "redirect_uri", "in": "query", "required": true, "schema": {"type": "string", "minLength": 1}},
                  {"name": "scope", "in": "query", "schema": {"type": "string"}},
                  {"name": "state", "in": "query", "schema": {"type": "string"}},
                  {"name": "code_challenge", "in": "query", "schema": {"type": "string"}},
                  {"name": "code_challenge_method", "in": "query", "schema": {"type": "string", "enum": ["S256"]}}
                ],
                "responses": {"200": {"description": "An HTML form", "content": {"text/html": {}}}, "302": {"description": "Back to the client with an error"}, "400": {"description": "An HTML page: unknown client or redirect URI"}}
              },
              "post": {
                "summary": "The form's submission: credentials and the decision (same-origin posts with a form token bound to the browser only)",
                "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["response_type", "client_id", "redirect_uri", "form_token"], "properties": {"response_type": {"type": "string", "enum": ["code", "token"]}, "client_id": {"type": "string", "minLength": 1}, "redirect_uri": {"type": "string", "minLength": 1}, "scope": {"type": "string"}, "state": {"type": "string"}, "code_challenge": {"type": "string"}, "code_challenge_method": {"type": "string", "enum": ["S256"]}, "nonce": {"type": "string"}, "form_token": {"type": "string", "minLength": 1}, "decision": {"type": "string", "enum": ["allow", "deny"]}, "username": {"type": "string"}, "password": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"302": {"description": "Back to the client with a code, a token (fragment) or an error, with state and iss"}, "400": {"description": "An HTML page"}, "401": {"description": "The form again, with an error"}, "403": {"description": "Posted from another origin"}, "429": {"description": "The form again: too many failed sign-ins, with Retry-After"}}
              }
            },
            "/oauth/token": {
              "post": {
                "summary": "Token endpoint: authorization_code, refresh_token (rotating), password, client_credentials, device_code",
                "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["grant_type"], "properties": {"grant_type": {"type": "string", "enum": ["authorization_code", "refresh_token", "password", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"]}, "client_id": {"type": "string", "minLength": 1}, "client_secret": {"type": "string", "minLength": 1}, "code": {"type": "string", "minLength": 1}, "redirect_uri": {"type": "string", "minLength": 1}, "code_verifier": {"type": "string", "minLength": 1}, "refresh_token": {"type": "string", "minLength": 1}, "username": {"type": "string", "minLength": 1}, "password": {"type": "string", "minLength": 1}, "scope": {"type": "string"}, "device_code": {"type": "string", "minLength": 1}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"200": {"$ref": "#/components/responses/Tokens"}, "400": {"$ref": "#/components/responses/OAuthError"}, "401": {"$ref": "#/components/responses/OAuthError"}, "429": {"$ref": "#/components/responses/OAuthError"}}
              }
            },
            "/oauth/revoke": {
              "post": {"summary": "Token revocation (RFC 7009)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["token", "client_id"], "properties": {"token": {"type": "string", "minLength": 1}, "token_type_hint": {"type": "string", "enum": ["access_token", "refresh_token"]}, "client_id": {"type": "string", "minLength": 1}, "client_secret": {"type": "string", "minLength": 1}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "Revoked, or nothing to revoke"}, "400": {"$ref": "#/components/responses/OAuthError"}, "401": {"$ref": "#/components/responses/OAuthError"}, "429": {"$ref": "#/components/responses/OAuthError"}}}
            },
            "/oauth/device_authorization": {
              "post": {"summary": "Device authorization (RFC 8628)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["client_id"], "properties": {"client_id": {"type": "string", "minLength": 1}, "client_secret": {"type": "string", "minLength": 1}, "scope": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "device_code, user_code, verification_uri, verification_uri_complete, expires_in, interval"}, "400": {"$ref": "#/components/responses/OAuthError"}, "401": {"$ref": "#/components/responses/OAuthError"}, "429": {"$ref": "#/components/responses/OAuthError"}}}
            },
            "/device": {
              "get": {"summary": "The page where a user enters a device's code", "parameters": [{"name": "user_code", "in": "query", "schema": {"type": "string"}}], "responses": {"200": {"description": "An HTML form", "content": {"text/html": {}}}, "400": {"$ref": "#/components/responses/Error"}}},
              "post": {"summary": "The device page's submission: the code and sign-in (purpose=device), then the confirmation (purpose=device_confirm)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["purpose", "form_token", "user_code"], "properties": {"purpose": {"type": "string", "enum": ["device", "device_confirm"]}, "form_token": {"type": "string", "minLength": 1}, "user_code": {"type": "string", "minLength": 1}, "username": {"type": "string"}, "password": {"type": "string"}, "decision": {"type": "string", "enum": ["allow", "deny"]}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "An HTML page"}, "400": {"description": "An HTML page"}, "401": {"description": "An HTML page"}, "403": {"description": "Posted from another origin"}, "429": {"description": "Too many failed sign-ins or wrong codes, with Retry-After"}}}
            },
            "/oauth/logout": {
              "get": {"summary": "Ends the browser session; then to return_to (a sign-in page path) or a registered redirect_uri of client_id when given", "parameters": [{"name": "return_to", "in": "query", "schema": {"type": "string"}}, {"name": "client_id", "in": "query", "schema": {"type": "string"}}, {"name": "redirect_uri", "in": "query", "schema": {"type": "string"}}], "responses": {"200": {"description": "An HTML page"}, "302": {"description": "To return_to or the client's redirect URI"}, "400": {"$ref": "#/components/responses/Error"}}}
            },
            "/records/{type}": {
              "parameters": [{"name": "type", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}],
              "post": {
                "summary": "Create a record; the server assigns its id (a token needs records:write)",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [{"$ref": "#/components/parameters/IdempotencyKey"}, {"name": "visibility", "in": "query", "description": "private: readable, listable and changeable by its owner only (others get 404 and lists leave it out); needs a signed-in user", "schema": {"type": "string", "enum": ["public", "private"], "default": "public"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {
                  "201": {"description": "Created (or, with a repeated Idempotency-Key, the first answer again)", "headers": {"ETag": {"schema": {"type": "string"}}, "Location": {"schema": {"type": "string"}}, "Idempotency-Replayed": {"description": "true when this answer repeats the first one for the Idempotency-Key", "schema": {"type": "string", "enum": ["true"]}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "413": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              },
              "get": {
                "summary": "List records: keyset cursor (limit, cursor) or page numbers (page, per_page); sort; equality filters on fields (a token needs records:read). Private records of other users are left out",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [
                  {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
                  {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                  {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 9223372036854775}},
                  {"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                  {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["created", "-created", "updated", "-updated"]}}
                ],
                "responses": {
                  "200": {"description": "One page", "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/CursorPage"}, {"$ref": "#/components/schemas/NumberedPage"}]}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/records/{type}/changes": {
              "parameters": [{"name": "type", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}],
              "get": {
                "summary": "The type's record changes as Server-Sent Events: a ready event, then one event per change (id: position; event: created, updated or deleted; data: {id, change, version, record}). Resumes after Last-Event-ID or after; private records' changes go to their owner only (a token needs records:read)",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [
                  {"name": "Last-Event-ID", "in": "header", "description": "Resume after this position (the id of the last event received); wins over after", "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}},
                  {"name": "after", "in": "query", "description": "Resume after this position; without either, the stream starts at the newest change", "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}}
                ],
                "responses": {
                  "200": {"description": "An endless event stream with heartbeat comments", "content": {"text/event-stream": {"schema": {"type": "object", "description": "One event: id is the resume position, event is ready, created, updated or deleted, data is JSON", "properties": {"id": {"type": "string"}, "event": {"type": "string"}, "data": {"type": "string"}, "retry": {"type": "integer"}}}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "410": {"$ref": "#/components/responses/Error"},
                  "501": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/records/{type}/{id}": {
              "parameters": [
                {"name": "type", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}},
                {"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}
              ],
              "get": {
                "summary": "Read a record; If-None-Match gives 304 (a token needs records:read). Another user's private record is 404",
                "security": [{}, {"bearer": ["records:read"]}],
                "responses": {
                  "200": {"description": "The record", "headers": {"ETag": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "304": {"description": "Not modified"},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"}
                }
              },
              "put": {
                "summary": "Replace a record's fields; If-Match gives 412 on a mismatch (a token needs records:write)",
                "security": [{}, {"bearer": ["records:write"]}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {
                  "200": {"description": "The record", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              },
              "patch": {
                "summary": "Apply a JSON Merge Patch (RFC 7396); If-Match gives 412 on a mismatch (a token needs records:write)",
                "security": [{}, {"bearer": ["records:write"]}],
                "requestBody": {"required": true, "content": {"application/merge-patch+json": {"schema": {"type": "object"}}}},
                "responses": {
                  "200": {"description": "The record", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "415": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              },
              "delete": {
                "summary": "Delete a record; If-Match gives 412 on a mismatch (a token needs records:write)",
                "security": [{}, {"bearer": ["records:write"]}],
                "responses": {
                  "204": {"description": "Deleted"},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              }
            },
            "/files/{name}": {
              "parameters": [
                {"name": "name", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$"}},
                {"name": "upload", "in": "query", "required": false, "description": "A resumable upload's id, chosen by the client (16-64 of A-Z a-z 0-9 _ -)", "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,64}$"}}
              ],
              "get": {
                "summary": "Download a file, streamed, with ETag, Content-Type, Content-Length, Accept-Ranges, Repr-Digest; one byte range (Range, If-Range) gives 206; If-None-Match gives 304. With ?upload=ID: the upload's stored offset (owner only). Open to everyone (a token needs records:read)",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [
                  {"name": "Range", "in": "header", "required": false, "schema": {"type": "string"}},
                  {"name": "If-Range", "in": "header", "required": false, "schema": {"type": "string"}},
                  {"name": "If-None-Match", "in": "header", "required": false, "schema": {"type": "string"}}
                ],
                "responses": {
                  "200": {"description": "The whole file (or, with ?upload=ID, {name, upload, offset} and Upload-Offset)", "headers": {"ETag": {"schema": {"type": "string"}}, "Accept-Ranges": {"schema": {"type": "string"}}, "Repr-Digest": {"schema": {"type": "string"}}, "Upload-Offset": {"schema": {"type": "integer"}}}, "content": {"application/json": {"description": "a file stored as JSON, or the upload's {name, upload, offset}", "schema": {}}, "*/*": {"description": "the file's bytes, with the Content-Type it was uploaded with", "schema": {}}}},
                  "206": {"description": "The requested range", "headers": {"Content-Range": {"schema": {"type": "string"}}}, "content": {"*/*": {"schema": {}}}},
                  "304": {"description": "Not modified"},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "416": {"description": "No byte of the file is in the range; Content-Range: bytes */size", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                }
              },
              "put": {
                "summary": "Upload a file, streamed; owner-only replace (a signed-in user's token with records:write). Not bound by the 1 MiB body limit but by the operator's per-file limit (413 file_too_large). Resumable with ?upload=ID, Upload-Offset and Upload-Complete: ?0 (204 with Upload-Offset; 409 upload_offset_mismatch when the offset differs). Repr-Digest sha-256 is checked at the end (422 checksum_mismatch)",
                "security": [{"bearer": ["records:write"]}],
                "parameters": [
                  {"name": "Upload-Offset", "in": "header", "required": false, "schema": {"type": "integer", "minimum": 0}},
                  {"name": "Upload-Complete", "in": "header", "required": false, "schema": {"type": "string", "enum": ["?0", "?1"]}},
                  {"name": "Repr-Digest", "in": "header", "required": false, "description": "sha-256=:BASE64: (RFC 9530) of the whole file", "schema": {"type": "string", "pattern": "^sha-256=:[A-Za-z0-9+/]{43}=:$"}}
                ],
                "requestBody": {"required": true, "description": "The file's bytes; the Content-Type sent is stored and served back (application/octet-stream when none)", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                "responses": {
                  "200": {"description": "Replaced", "headers": {"ETag": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/File"}}}},
                  "201": {"description": "Created", "headers": {"ETag": {"schema": {"type": "string"}}, "Location": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/File"}}}},
                  "204": {"description": "Part stored (Upload-Complete: ?0); Upload-Offset is the new size", "headers": {"Upload-Offset": {"schema": {"type": "integer"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "413": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"}
                }
              },
              "delete": {
                "summary": "Delete a file (its owner only), or with ?upload=ID forget a pending upload",
                "security": [{"bearer": ["records:write"]}],
                "responses": {
                  "204": {"description": "Deleted"},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"}
                }
              }
            }
          },
          "components": {
            "securitySchemes": {
              "bearer": {"type": "http", "scheme": "bearer"},
              "oauth2": {"type": "oauth2", "description": "How bearer tokens are obtained (RFC 6749); the device flow (RFC 8628) starts at /oauth/device_authorization", "flows": {"authorizationCode": {"authorizationUrl": "/oauth/authorize", "tokenUrl": "/oauth/token", "refreshUrl": "/oauth/token", "scopes": {"records:read": "Read and list records", "records:write": "Create, change and delete records", "profile": "Read the signed-in user's profile", "openid": "OpenID Connect sign-in"}}, "password": {"tokenUrl": "/oauth/token", "scopes": {}}, "clientCredentials": {"tokenUrl": "/oauth/token", "scopes": {}}}}
            },
            "parameters": {
              "IdempotencyKey": {"name": "Idempotency-Key", "in": "header", "required": false, "description": "Makes the POST safe to retry: the first answer per (caller, key) is kept 24 h and replayed with Idempotency-Replayed: true; another request with the key is 422 idempotency_key_reused; an invalid key is 400 invalid_idempotency_key. Anonymous callers share one namespace.", "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"}}
            },
            "responses": {
              "IdempotencyInProgress": {"description": "idempotency_in_progress: a call with this Idempotency-Key is still running; retry after Retry-After seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "Tokens": {"description": "access_token, token_type, expires_in, refresh_token, scope", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tokens"}}}},
              "OAuthError": {"description": "RFC 6749 error", "content": {"application/json": {"schema": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}}}}}},
              "Error": {"description": "A failure", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "Busy": {"description": "storage_busy: another process held the database's lock past the server's wait; retry after Retry-After seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
            },
            "schemas": {
              "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {
                  "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {}}
                  }
                }
              },
              "Health": {
                "type": "object",
                "properties": {"status": {"type": "string"}, "version": {"type": "string"}, "schema_version": {"type": "integer"}}
              },
              "Tokens": {
                "type": "object",
                "required": ["access_token", "token_type", "expires_in"],
                "properties": {"access_token": {"type": "string"}, "token_type": {"type": "string"}, "expires_in": {"type": "integer"}, "refresh_token": {"type": "string"}, "scope": {"type": "string"}}
              },
              "Record": {
                "type": "object",
                "description": "The client's fields plus the server-owned id, created_at and updated_at (ISO 8601, UTC, whole seconds)",
                "required": ["id", "created_at", "updated_at"],
                "properties": {"id": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"}},
                "additionalProperties": true
              },
              "CursorPage": {
                "type": "object",
                "required": ["results", "next_cursor", "prev_cursor", "next", "previous"],
                "properties": {
                  "results": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                  "next_cursor": {"type": ["string", "null"]}, "prev_cursor": {"type": ["string", "null"]},
                  "next": {"type": ["string", "null"]}, "previous": {"type": ["string", "null"]}
                }
              },
              "NumberedPage": {
                "type": "object",
                "required": ["results", "page", "per_page", "total", "total_pages"],
                "properties": {
                  "results": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                  "page": {"type": "integer"}, "per_page": {"type": "integer"}, "total": {"type": "integer"}, "total_pages": {"type": "integer"}
                }
              },
              "File": {
                "type": "object",
                "required": ["name", "size", "content_type", "sha256", "etag", "owner", "updated_at"],
                "properties": {"name": {"type": "string"}, "size": {"type": "integer"}, "content_type": {"type": "string"}, "sha256": {"type": "string"}, "etag": {"type": "string"}, "owner": {"type": "string"}, "updated_at": {"type": "string", "format": "date-time"}}
              },
              "LambdaCall": {
                "type": "object",
                "properties": {"args": {"oneOf": [{"type": "array"}, {"type": "object"}]}}
              },
              "LambdaResult": {
                "type": "object",
                "required": ["result"],
                "properties": {"result": {}}
              }
            }
          }
        }
        """#
}
