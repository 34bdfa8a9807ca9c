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
                "operationId": "getHealth", "summary": "Liveness and database check",
                "responses": {
                  "200": {"description": "Healthy", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Health"}}}},
                  "503": {"description": "The database does not answer", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HealthUnavailable"}}}}
                }
              }
            },
            "/health/ready": {
              "get": {
                "operationId": "getReadiness", "summary": "Readiness: whether this instance should take new requests (database answering, no bounded resource saturated)",
                "responses": {
                  "200": {"description": "Ready", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}},
                  "503": {"description": "The database does not answer, or the instance is saturated (saturated names what: list_scans, connections, password_checks)", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Readiness"}}}}
                }
              }
            },
            "/openapi.json": {
              "get": {
                "operationId": "getOpenAPIDocument", "summary": "This document",
                "responses": {"200": {"description": "The OpenAPI document", "headers": {"Cache-Control": {"$ref": "#/components/headers/PublicCache"}}, "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "info", "paths"], "properties": {"openapi": {"type": "string"}, "info": {"type": "object"}, "paths": {"type": "object"}, "components": {"type": "object"}}}}}}}
              }
            },
            "/.well-known/openid-configuration": {
              "get": {"operationId": "getOpenIDConfiguration", "summary": "OpenID Provider metadata (OpenID Connect Discovery 1.0)", "responses": {"200": {"description": "The metadata", "headers": {"Cache-Control": {"$ref": "#/components/headers/PublicCache"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OpenIDConfiguration"}}}}}}
            },
            "/.well-known/jwks.json": {
              "get": {
                "operationId": "getJSONWebKeySet", "summary": "The keys that sign ID tokens (RFC 7517): the key in use and keys retired within the grace period",
                "responses": {"200": {"description": "A JSON Web Key Set", "headers": {"Cache-Control": {"$ref": "#/components/headers/PublicCache"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JSONWebKeySet"}}}}}
              }
            },
            "/userinfo": {
              "get": {
                "operationId": "getUserInfo", "summary": "OpenID Connect UserInfo: sub, and preferred_username with the profile scope",
                "security": [{"bearer": []}],
                "responses": {"200": {"description": "The user's claims", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UserInfo"}}}}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              },
              "post": {
                "operationId": "postUserInfo", "summary": "OpenID Connect UserInfo (the access token may also come as access_token in a form body)",
                "security": [{"bearer": []}],
                "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"access_token": {"type": "string", "minLength": 1}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"200": {"description": "The user's claims", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/UserInfo"}}}}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/lambdas/{name}": {
              "post": {
                "operationId": "callLambda", "summary": "Call a remote function",
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
                "operationId": "callHandler", "summary": "Call a custom handler: any JSON in and out",
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
                "operationId": "signUp", "summary": "Sign up with a username and password (stored with Bcrypt). The operator's sign-up mode (outpost serve --signup) decides who may: open (anyone), invite (with a one-time code from outpost users invite in invite; 403 invite_required or invite_invalid otherwise) or closed (403 signup_closed)",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["username", "password"], "properties": {"username": {"type": "string", "pattern": "^[A-Za-z0-9._@-]{3,64}$"}, "password": {"type": "string", "minLength": 8}, "invite": {"type": "string", "description": "A one-time invite code (inv_...) from the operator; required when the server takes sign-ups by invitation, ignored otherwise (400 invalid_invite when it is not a string of at most 128 characters). Spent by the sign-up it creates", "maxLength": 128}}}}}},
                "responses": {"201": {"description": "The new user's id and username", "headers": {"Location": {"description": "/me", "schema": {"type": "string"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewUser"}}}}, "400": {"$ref": "#/components/responses/Error"}, "403": {"description": "signup_closed (the server takes no sign-ups), invite_required (it takes them by invitation and none was sent) or invite_invalid (the code is unknown, spent or expired)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "408": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}, "429": {"description": "Too many sign-ups from this address; see Retry-After", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "503": {"$ref": "#/components/responses/Busy"}}
              }
            },
            "/me": {
              "get": {
                "operationId": "getMe", "summary": "The signed-in user (Authorization: Bearer with the profile scope; a token in the query is refused)",
                "security": [{"bearer": ["profile"]}],
                "responses": {"200": {"description": "The token's user (id, username, entitlements) with its client_id and scope; a token without a user (client credentials) gives client_id, scope and user: null", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Me"}}}}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              },
              "delete": {
                "operationId": "deleteMe", "summary": "Delete the signed-in user's account: the user, every token of theirs, browser sessions, and their records and files (deleted, or given to another user as the server's operator chose). A body is ignored",
                "security": [{"bearer": ["profile", "records:write"]}],
                "responses": {"204": {"description": "Deleted; every token of the account is refused from now on"}, "401": {"description": "sign_in_required, or invalid_token (the token, or its account, is gone)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "403": {"description": "insufficient_scope (the token lacks profile or records:write) or no_user (a client's own token)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "409": {"description": "account_is_recipient: the account receives deleted accounts' records", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "502": {"description": "account_deletion_failed: a deletion hook of the server failed; nothing was removed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "503": {"$ref": "#/components/responses/Busy"}}
              },
              "patch": {
                "operationId": "updateMe", "summary": "Set or remove the signed-in user's e-mail address. A new address is unverified; when the server sends mail, a verification link goes to it",
                "security": [{"bearer": ["profile"]}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"email": {"type": ["string", "null"], "minLength": 3, "maxLength": 254, "pattern": "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$", "description": "The address, local@domain in ASCII, or null for none"}}, "additionalProperties": false}}}},
                "responses": {"200": {"description": "The user's address now and whether it is verified", "content": {"application/json": {"schema": {"type": "object", "required": ["email", "email_verified"], "properties": {"email": {"type": ["string", "null"]}, "email_verified": {"type": "boolean"}}}}}}, "400": {"description": "invalid_profile or invalid_email", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Busy"}}
              }
            },
            "/me/identities": {
              "get": {
                "operationId": "listIdentities", "summary": "The upstream identities linked to the signed-in user",
                "security": [{"bearer": ["profile"]}],
                "responses": {"200": {"description": "Each linked identity: provider (the registered name, or a sign-in plugin's provider), issuer (null for a plugin's), subject, and the e-mail the provider gave last", "content": {"application/json": {"schema": {"type": "object", "required": ["identities"], "properties": {"identities": {"type": "array", "items": {"type": "object", "required": ["provider", "issuer", "subject", "email", "email_verified"], "properties": {"provider": {"type": "string"}, "issuer": {"type": ["string", "null"]}, "subject": {"type": "string"}, "email": {"type": ["string", "null"]}, "email_verified": {"type": ["boolean", "null"]}}}}}}}}}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              },
              "post": {
                "operationId": "linkIdentity", "summary": "Link an upstream provider's identity (its ID token and nonce) to the signed-in user",
                "security": [{"bearer": ["profile"]}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["provider", "id_token"], "properties": {"provider": {"type": "string", "minLength": 1}, "id_token": {"type": "string", "minLength": 1}, "nonce": {"type": "string", "minLength": 1}}, "additionalProperties": false}}}},
                "responses": {"201": {"description": "The identity now signs in to this user: provider, issuer, subject", "content": {"application/json": {"schema": {"type": "object", "required": ["provider", "issuer", "subject"], "properties": {"provider": {"type": "string"}, "issuer": {"type": "string"}, "subject": {"type": "string"}}}}}}, "400": {"description": "invalid_identity, or invalid_grant: the ID token was refused (the message says why)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"description": "unknown_provider: no upstream provider of that name", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "409": {"description": "identity_linked: the identity signs in to another user", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "429": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/me/identities/{provider}/{subject}": {
              "delete": {
                "operationId": "unlinkIdentity", "summary": "Unlink an upstream identity from the signed-in user; the account's only way to sign in (no password, no other identity) stays linked",
                "security": [{"bearer": ["profile"]}],
                "parameters": [
                  {"name": "provider", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}, "description": "The provider's registered name (as GET /me/identities shows it)"},
                  {"name": "subject", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1}, "description": "The identity's subject, percent-encoded"}
                ],
                "responses": {"204": {"description": "Unlinked: the identity no longer signs in to this account"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"description": "identity_not_linked: no such identity is linked to this account", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "409": {"description": "last_sign_in_method: the identity is the account's only way to sign in", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}
              }
            },
            "/auth/login": {
              "post": {
                "operationId": "signInWithProvider", "summary": "Sign in through a custom authentication provider",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["provider", "auth_data", "client_id"], "properties": {"provider": {"type": "string", "minLength": 1}, "auth_data": {"type": "object"}, "client_id": {"type": "string", "minLength": 1}}}}}},
                "responses": {"200": {"$ref": "#/components/responses/Tokens"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"description": "invalid_client (an unknown client_id) or provider_rejected", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "403": {"description": "account_disabled: an administrator disabled the user", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "404": {"description": "unknown_provider: the server has no provider of that name", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}, "429": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/.well-known/oauth-authorization-server": {
              "get": {"operationId": "getAuthorizationServerMetadata", "summary": "Authorization server metadata (RFC 8414)", "responses": {"200": {"description": "The metadata", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AuthorizationServerMetadata"}}}}}}
            },
            "/oauth/authorize": {
              "get": {
                "operationId": "getAuthorizationPage", "summary": "The sign-in and consent page (authorization code with PKCE S256, or implicit for clients allowed it)",
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
                "operationId": "submitAuthorization", "summary": "The form's submission: credentials and the decision (same-origin posts with a form token bound to the browser only)",
                "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["response_type", "client_id", "redirect_uri", "form_token"], "properties": {"response_type": {"type": "string", "enum": ["code", "token"]}, "client_id": {"type": "string", "minLength": 1}, "redirect_uri": {"type": "string", "minLength": 1}, "scope": {"type": "string"}, "state": {"type": "string"}, "code_challenge": {"type": "string"}, "code_challenge_method": {"type": "string", "enum": ["S256"]}, "nonce": {"type": "string"}, "form_token": {"type": "string", "minLength": 1}, "decision": {"type": "string", "enum": ["allow", "deny"]}, "upstream": {"type": "string", "description": "The name of an upstream provider whose Continue with button was pressed: the sign-in goes on at that provider"}, "username": {"type": "string"}, "password": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"302": {"description": "Back to the client with a code, a token (fragment) or an error, with state and iss"}, "303": {"description": "On to the upstream provider's sign-in page (upstream), with the cookie that binds the sign-in to the browser"}, "400": {"description": "An HTML page"}, "401": {"description": "The form again, with an error"}, "403": {"description": "Posted from another origin, or the form again: the account is disabled"}, "429": {"description": "The form again: too many failed sign-ins, with Retry-After"}, "502": {"description": "The form again: the upstream provider cannot be reached"}}
              }
            },
            "/oauth/upstream/callback": {
              "get": {
                "operationId": "finishUpstreamSignIn", "summary": "Where an upstream provider returns the browser (OpenID Connect code flow with PKCE, state and nonce); the state must be one this browser started",
                "parameters": [
                  {"name": "state", "in": "query", "schema": {"type": "string"}},
                  {"name": "code", "in": "query", "schema": {"type": "string"}},
                  {"name": "error", "in": "query", "schema": {"type": "string"}},
                  {"name": "error_description", "in": "query", "schema": {"type": "string"}},
                  {"name": "iss", "in": "query", "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "The device's confirm step, as an HTML page", "content": {"text/html": {}}}, "302": {"description": "Back to the app with a code, a token (fragment) or an error"}, "400": {"description": "An HTML page: the state is unknown, used, expired or bound to another browser, or the provider answered an error"}, "502": {"description": "An HTML page: the provider's token endpoint or ID token was refused"}}
              },
              "post": {
                "operationId": "finishUpstreamSignInFormPost", "summary": "The same answer as a form (response_mode=form_post, as Sign in with Apple sends it)",
                "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"state": {"type": "string"}, "code": {"type": "string"}, "error": {"type": "string"}, "user": {"type": "string", "description": "Apple's first-sign-in name and e-mail (not read)"}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"200": {"description": "The device's confirm step, as an HTML page", "content": {"text/html": {}}}, "303": {"description": "Back to the app with a code, a token (fragment) or an error"}, "400": {"description": "An HTML page: the state is unknown, used, expired or bound to another browser, or the provider answered an error"}, "502": {"description": "An HTML page: the provider's token endpoint or ID token was refused"}}
              }
            },
            "/oauth/token": {
              "post": {
                "operationId": "requestToken", "summary": "Token endpoint: authorization_code, refresh_token (rotating), password, client_credentials, device_code, token exchange of an upstream ID token (RFC 8693)",
                "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["grant_type"], "properties": {"grant_type": {"type": "string", "enum": ["authorization_code", "refresh_token", "password", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:token-exchange"]}, "client_id": {"type": "string", "minLength": 1}, "client_secret": {"type": "string", "description": "Checked for confidential clients only; a public client's is ignored"}, "code": {"type": "string", "minLength": 1}, "redirect_uri": {"type": "string", "minLength": 1}, "code_verifier": {"type": "string", "minLength": 1}, "refresh_token": {"type": "string", "minLength": 1}, "username": {"type": "string", "minLength": 1}, "password": {"type": "string", "minLength": 1}, "scope": {"type": "string"}, "device_code": {"type": "string", "minLength": 1}, "subject_token": {"type": "string", "minLength": 1}, "subject_token_type": {"type": "string", "enum": ["urn:ietf:params:oauth:token-type:id_token"]}, "requested_token_type": {"type": "string"}, "provider": {"type": "string", "minLength": 1}, "nonce": {"type": "string", "minLength": 1}, "authorization_code": {"type": "string", "description": "Token exchange: the code Sign in with Apple gave the app with the ID token; the server redeems it and keeps the refresh token, sealed, to revoke when the account is deleted"}}, "additionalProperties": {"type": "string"}}}}},
                "responses": {"200": {"$ref": "#/components/responses/Tokens"}, "400": {"$ref": "#/components/responses/OAuthError"}, "401": {"$ref": "#/components/responses/OAuthError"}, "429": {"$ref": "#/components/responses/OAuthError"}}
              }
            },
            "/oauth/revoke": {
              "post": {"operationId": "revokeToken", "summary": "Token revocation (RFC 7009)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["token", "client_id"], "properties": {"token": {"type": "string", "description": "The token to revoke; an unknown, expired or empty one is answered 200 too (RFC 7009 §2.2)"}, "token_type_hint": {"type": "string", "description": "access_token or refresh_token (RFC 7009 §2.1): a hint only, the server finds the token either way and ignores the value"}, "client_id": {"type": "string", "minLength": 1}, "client_secret": {"type": "string", "description": "Checked for confidential clients only; a public client's is ignored"}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "Revoked, or nothing to revoke"}, "400": {"$ref": "#/components/responses/OAuthError"}, "401": {"$ref": "#/components/responses/OAuthError"}, "429": {"$ref": "#/components/responses/OAuthError"}}}
            },
            "/oauth/device_authorization": {
              "post": {"operationId": "authorizeDevice", "summary": "Device authorization (RFC 8628)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["client_id"], "properties": {"client_id": {"type": "string", "minLength": 1}, "client_secret": {"type": "string", "description": "Checked for confidential clients only; a public client's is ignored"}, "scope": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "The device's code and the code the user enters at verification_uri", "headers": {"Cache-Control": {"$ref": "#/components/headers/NoStore"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeviceAuthorization"}}}}, "400": {"$ref": "#/components/responses/OAuthError"}, "401": {"$ref": "#/components/responses/OAuthError"}, "429": {"$ref": "#/components/responses/OAuthError"}}}
            },
            "/device": {
              "get": {"operationId": "getDevicePage", "summary": "The page where a user enters a device's code", "parameters": [{"name": "user_code", "in": "query", "schema": {"type": "string"}}], "responses": {"200": {"description": "An HTML form", "content": {"text/html": {}}}, "400": {"$ref": "#/components/responses/Error"}}},
              "post": {"operationId": "submitDevicePage", "summary": "The device page's submission: the code and sign-in (purpose=device), then the confirmation (purpose=device_confirm)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["purpose", "form_token", "user_code"], "properties": {"purpose": {"type": "string", "enum": ["device", "device_confirm"]}, "form_token": {"type": "string", "minLength": 1}, "user_code": {"type": "string", "minLength": 1}, "username": {"type": "string"}, "password": {"type": "string"}, "decision": {"type": "string", "enum": ["allow", "deny"]}, "upstream": {"type": "string", "description": "The name of an upstream provider whose Continue with button was pressed"}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "An HTML page"}, "303": {"description": "On to the upstream provider's sign-in page (upstream)"}, "400": {"description": "An HTML page"}, "401": {"description": "An HTML page"}, "403": {"description": "Posted from another origin"}, "429": {"description": "Too many failed sign-ins or wrong codes, with Retry-After"}, "502": {"description": "An HTML page: the upstream provider cannot be reached"}}}
            },
            "/password/forgot": {
              "get": {"operationId": "getForgotPasswordPage", "summary": "The \"Forgot password?\" page: a form for a username or an e-mail address (404 when the server sends no mail)", "responses": {"200": {"description": "An HTML form", "content": {"text/html": {}}}, "404": {"description": "An HTML page: the server sends no mail"}}},
              "post": {"operationId": "submitForgotPassword", "summary": "Asks for a reset link. The answer is the same page whether or not an account matches; the link goes only to an account's verified address, later, off the request", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["form_token", "identifier"], "properties": {"form_token": {"type": "string", "minLength": 1}, "form": {"type": "string"}, "identifier": {"type": "string", "minLength": 1, "maxLength": 254}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "An HTML page: if an account matches, a message is on its way"}, "400": {"description": "The form again, with an error"}, "403": {"description": "Posted from another origin"}, "404": {"description": "An HTML page: the server sends no mail"}, "429": {"description": "The form again: too many requests from this address, with Retry-After"}}}
            },
            "/password/reset": {
              "get": {"operationId": "getPasswordResetPage", "summary": "The mailed link's page: a form for the new password (the token is not spent)", "parameters": [{"name": "token", "in": "query", "schema": {"type": "string"}}], "responses": {"200": {"description": "An HTML form", "content": {"text/html": {}}}, "400": {"description": "An HTML page: the link was used, expired or is incomplete"}}},
              "post": {"operationId": "submitPasswordReset", "summary": "Sets the new password, spends the token and signs the account out everywhere (every token family and browser session revoked)", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["form_token", "token", "password", "confirm"], "properties": {"form_token": {"type": "string", "minLength": 1}, "form": {"type": "string"}, "token": {"type": "string", "minLength": 1}, "password": {"type": "string", "minLength": 8}, "confirm": {"type": "string", "minLength": 8}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "An HTML page: the password is changed"}, "400": {"description": "An HTML page: the form again with an error, or the link does not work"}, "403": {"description": "Posted from another origin"}}}
            },
            "/email/verify": {
              "get": {"operationId": "getEmailVerificationPage", "summary": "The mailed link's page: a button that confirms the address (the token is not spent)", "parameters": [{"name": "token", "in": "query", "schema": {"type": "string"}}], "responses": {"200": {"description": "An HTML form", "content": {"text/html": {}}}, "400": {"description": "An HTML page: the link was used, expired or is incomplete"}}},
              "post": {"operationId": "submitEmailVerification", "summary": "Confirms the address and spends the token", "requestBody": {"required": true, "content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "required": ["form_token", "token"], "properties": {"form_token": {"type": "string", "minLength": 1}, "form": {"type": "string"}, "token": {"type": "string", "minLength": 1}}, "additionalProperties": {"type": "string"}}}}}, "responses": {"200": {"description": "An HTML page: the address is confirmed"}, "400": {"description": "An HTML page: the form expired, or the link does not work"}, "403": {"description": "Posted from another origin"}}}
            },
            \#(AdminConsole.openAPIPaths)
            \#(AdminConsole.usersOpenAPIPaths)
            \#(AdminConsole.operationsOpenAPIPaths)
            \#(AdminConsole.recordsOpenAPIPaths)
            "/oauth/logout": {
              "get": {"operationId": "logOut", "summary": "Ends the browser session; then to return_to (a sign-in page path) or a registered redirect_uri of client_id when given", "parameters": [{"name": "return_to", "in": "query", "schema": {"type": "string"}}, {"name": "client_id", "in": "query", "schema": {"type": "string"}}, {"name": "redirect_uri", "in": "query", "schema": {"type": "string"}}], "responses": {"200": {"description": "An HTML page"}, "302": {"description": "To return_to or the client's redirect URI"}, "400": {"$ref": "#/components/responses/Error"}}}
            },
            "/records/batch": {
              "post": {
                "operationId": "writeRecordBatch", "summary": "Up to 100 creates, replacements, merge patches and deletes, run in order in one transaction: all or nothing. Each operation is checked as its single-record route is (a token needs records:write); a failure answers that operation's error with details.index, or 409 batch_conflict when an earlier operation of the batch wrote its record. batch is no record type",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [{"$ref": "#/components/parameters/IdempotencyKey"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BatchRequest"}}}},
                "responses": {
                  "507": {"$ref": "#/components/responses/QuotaExceeded"},
                  "200": {"description": "Every operation's result, in order (or, with a repeated Idempotency-Key, the first answer again)", "headers": {"Idempotency-Replayed": {"description": "true when this answer repeats the first one for the Idempotency-Key", "schema": {"type": "string", "enum": ["true"]}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/BatchResults"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "413": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              }
            },
            "/records/{type}": {
              "parameters": [{"name": "type", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}],
              "post": {
                "operationId": "createRecord", "summary": "Create a record; the server assigns its id (a token needs records:write)",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [{"$ref": "#/components/parameters/IdempotencyKey"}, {"name": "visibility", "in": "query", "description": "private: readable, listable and changeable by its owner only (others get 404 and lists leave it out); needs a signed-in user", "schema": {"type": "string", "enum": ["public", "private"], "default": "public"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {
                  "507": {"$ref": "#/components/responses/QuotaExceeded"},
                  "201": {"description": "Created (or, with a repeated Idempotency-Key, the first answer again)", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}, "Location": {"schema": {"type": "string"}}, "Idempotency-Replayed": {"description": "true when this answer repeats the first one for the Idempotency-Key", "schema": {"type": "string", "enum": ["true"]}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
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
                "operationId": "listRecords", "summary": "List records: keyset cursor (limit, cursor) or page numbers (page, per_page); sort by time or fields; a filter expression and equality filters on fields (a token needs records:read). Private records of other users are left out",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [
                  {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
                  {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                  {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 9223372036854775}},
                  {"name": "per_page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                  {"name": "sort", "in": "query", "description": "created, -created, updated or -updated (the default is created); or up to 3 comma-separated keys, each a top-level field name or created, updated or id, with - for descending (-views,title), always ended by id so no two records tie. Mixed types sort null (and missing) < false < true < numbers < strings (by code point, first 100 characters) < arrays and objects. 400 invalid_sort otherwise", "schema": {"type": "string", "pattern": "^-?[A-Za-z0-9_][A-Za-z0-9_-]{0,63}(,-?[A-Za-z0-9_][A-Za-z0-9_-]{0,63}){0,2}$"}},
                  {"name": "filter", "in": "query", "description": "An expression of the rules' language over record (its fields, id, owner, private), e.g. record.views > 10 && record.tag in [\"a\", \"b\"]; ^= is a string prefix. Lists only records for which it is true. 400 invalid_filter with details.code, details.offset and details.column when it does not parse, or details.code unsupported_expression or too_complex when it cannot run as a query. On a type of more records than the server's bound (10,000 by default), a filter or a sort by fields that no declared index serves is 400 index_required, whose message and details name the fields to index and the command (outpost types index TYPE FIELD...)", "schema": {"type": "string", "maxLength": 4096}},
                  {"name": "fields", "in": "query", "style": "form", "explode": true, "description": "Equality filters on top-level fields: every query parameter other than limit, cursor, page, per_page, sort and filter is one, field=value (this object's members are sent as separate parameters; the name fields itself is not sent). A value that reads as JSON (30, 2.5, true, false, null, \"30\") is compared as that JSON value, anything else as text. A field name is 1-64 letters, digits, _ or - (400 invalid_filter otherwise)", "schema": {"$ref": "#/components/schemas/ListFilter"}},
                  {"$ref": "#/components/parameters/IfNoneMatch"}
                ],
                "responses": {
                  "200": {"description": "One page: a NumberedPage when page is given, else a CursorPage. The two share no member but results and neither allows another, so an answer matches exactly one", "headers": {"ETag": {"description": "A weak ETag of the page; If-None-Match with it answers 304 while the page is unchanged", "schema": {"type": "string"}}, "Cache-Control": {"$ref": "#/components/headers/PrivateCache"}}, "content": {"application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/NumberedPage"}, {"$ref": "#/components/schemas/CursorPage"}]}}}},
                  "304": {"description": "Not modified: If-None-Match names the page's ETag", "headers": {"ETag": {"schema": {"type": "string"}}, "Cache-Control": {"$ref": "#/components/headers/PrivateCache"}}},
                  "400": {"$ref": "#/components/responses/Error", "description": "invalid_limit, invalid_page, invalid_sort, invalid_filter, invalid_cursor, conflicting_pagination, or index_required: a filter or sort by fields that no declared index serves when the caller may list more records than the server's bound; details.fields and details.command name the index to declare; page_too_large: a page by number holds more bytes than a page may (details.max_bytes); walk with cursors, whose pages end at that size"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "503": {"description": "server_busy: the instance runs as many lists no declared index serves as it may (or this address has two running or waiting); or storage_busy. Retry after Retry-After seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                }
              }
            },
            "/records/{type}/changes": {
              "parameters": [{"name": "type", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}],
              "get": {
                "operationId": "listChanges", "summary": "The type's record changes as Server-Sent Events: a ready event, then one event per change (id: position; event: created, updated or deleted; data: {id, change, version, record}). Resumes after Last-Event-ID or after; private records' changes go to their owner only (a token needs records:read)",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [
                  {"name": "Last-Event-ID", "in": "header", "description": "Resume after this position (the id of the last event received); wins over after", "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}},
                  {"name": "after", "in": "query", "description": "Resume after this position; without either, the stream starts at the newest change", "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}},
                  {"name": "filter", "in": "query", "description": "A list filter (the filter of listRecords): only changes whose record matches go out, and a left event (data: {id, change, version}) when an update makes a record stop matching", "schema": {"type": "string", "maxLength": 4096}}
                ],
                "responses": {
                  "200": {"description": "An endless event stream with heartbeat comments", "content": {"text/event-stream": {"schema": {"type": "object", "description": "One event: id is the resume position, event is ready, created, updated, deleted or (with a filter) left, data is JSON", "properties": {"id": {"type": "string"}, "event": {"type": "string"}, "data": {"type": "string"}, "retry": {"type": "integer"}}}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "410": {"$ref": "#/components/responses/Error"},
                  "429": {"$ref": "#/components/responses/Error"},
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
                "operationId": "getRecord", "summary": "Read a record; If-None-Match gives 304 (a token needs records:read). Another user's private record is 404",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [{"$ref": "#/components/parameters/IfNoneMatch"}, {"$ref": "#/components/parameters/IfModifiedSince"}],
                "responses": {
                  "200": {"description": "The record", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}, "Last-Modified": {"$ref": "#/components/headers/LastModified"}, "Cache-Control": {"$ref": "#/components/headers/PrivateCache"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "304": {"description": "Not modified: If-None-Match matched the ETag, or (without If-None-Match) the record is unchanged since If-Modified-Since", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}, "Last-Modified": {"$ref": "#/components/headers/LastModified"}, "Cache-Control": {"$ref": "#/components/headers/PrivateCache"}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"}
                }
              },
              "put": {
                "operationId": "replaceRecord", "summary": "Replace a record's fields; If-Match gives 412 on a mismatch (a token needs records:write); a server hook may refuse it (422 with its code)",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [{"$ref": "#/components/parameters/IfMatch"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {
                  "507": {"$ref": "#/components/responses/QuotaExceeded"},
                  "200": {"description": "The record", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              },
              "patch": {
                "operationId": "patchRecord", "summary": "Apply a JSON Merge Patch (RFC 7396); If-Match gives 412 on a mismatch (a token needs records:write); a server hook may refuse it (422 with its code)",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [{"$ref": "#/components/parameters/IfMatch"}],
                "requestBody": {"required": true, "content": {"application/merge-patch+json": {"schema": {"type": "object"}}}},
                "responses": {
                  "507": {"$ref": "#/components/responses/QuotaExceeded"},
                  "200": {"description": "The record", "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Record"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "408": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "415": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"},
                  "503": {"$ref": "#/components/responses/Busy"}
                }
              },
              "delete": {
                "operationId": "deleteRecord", "summary": "Delete a record; If-Match gives 412 on a mismatch (a token needs records:write); a server hook may refuse it (422 with its code)",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [{"$ref": "#/components/parameters/IfMatch"}],
                "responses": {
                  "204": {"description": "Deleted"},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "403": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "409": {"$ref": "#/components/responses/Error"},
                  "412": {"$ref": "#/components/responses/Error"},
                  "422": {"$ref": "#/components/responses/Error"},
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
                "operationId": "getFile", "summary": "Download a file, streamed, with ETag, Content-Type, Content-Length, Accept-Ranges, Repr-Digest; one byte range (Range, If-Range) gives 206; If-None-Match gives 304. With ?upload=ID: the upload's stored offset (owner only). Decided by the files' read rule (default: everyone; a file it hides is 404); a token needs records:read",
                "security": [{}, {"bearer": ["records:read"]}],
                "parameters": [
                  {"name": "Range", "in": "header", "required": false, "schema": {"type": "string"}},
                  {"name": "If-Range", "in": "header", "required": false, "schema": {"type": "string"}},
                  {"name": "If-None-Match", "in": "header", "required": false, "schema": {"type": "string"}}
                ],
                "responses": {
                  "200": {"description": "The file's bytes, with the Content-Type it was uploaded with (a file stored as JSON comes as application/json), X-Content-Type-Options: nosniff, a sandboxing Content-Security-Policy, and Content-Disposition attachment for every type but raster images, audio, video, plain text and JSON (inline); or, with ?upload=ID, the upload's {name, upload, offset} as JSON with Upload-Offset", "headers": {"ETag": {"schema": {"type": "string"}}, "Last-Modified": {"$ref": "#/components/headers/LastModified"}, "Accept-Ranges": {"schema": {"type": "string"}}, "Repr-Digest": {"schema": {"type": "string"}}, "Upload-Offset": {"schema": {"type": "integer"}}, "X-Content-Type-Options": {"schema": {"type": "string", "enum": ["nosniff"]}}, "Content-Security-Policy": {"schema": {"type": "string"}}, "Content-Disposition": {"schema": {"type": "string"}}}, "content": {"application/json": {"schema": {}}, "*/*": {"schema": {}}}},
                  "206": {"description": "The requested range, with the same X-Content-Type-Options, Content-Security-Policy and Content-Disposition", "headers": {"Content-Range": {"schema": {"type": "string"}}, "ETag": {"schema": {"type": "string"}}, "Last-Modified": {"$ref": "#/components/headers/LastModified"}, "X-Content-Type-Options": {"schema": {"type": "string", "enum": ["nosniff"]}}, "Content-Security-Policy": {"schema": {"type": "string"}}, "Content-Disposition": {"schema": {"type": "string"}}}, "content": {"*/*": {"schema": {}}}},
                  "304": {"description": "Not modified"},
                  "307": {"description": "The server serves files from a separate origin (outpost serve --files-url): Location is a signed link to the file there, valid for a few minutes, that needs no token", "headers": {"Location": {"schema": {"type": "string"}}}},
                  "400": {"$ref": "#/components/responses/Error"},
                  "401": {"$ref": "#/components/responses/Error"},
                  "404": {"$ref": "#/components/responses/Error"},
                  "416": {"description": "No byte of the file is in the range; Content-Range: bytes */size", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                }
              },
              "put": {
                "operationId": "putFile", "summary": "Upload a file, streamed. Decided by the files' create rule for a new name (default: a signed-in user; anonymous 401 sign_in_required) and update rule for an existing one (default: its owner; 403 forbidden_by_rule naming the rule, or 401 sign_in_required without a token, alike whether or not the caller may read the file); a token needs records:write. Not bound by the 1 MiB body limit but by the operator's per-file limit (413 file_too_large). Resumable with ?upload=ID, Upload-Offset and Upload-Complete: ?0 (204 with Upload-Offset; 409 upload_offset_mismatch when the offset differs). Repr-Digest sha-256 is checked at the end (422 checksum_mismatch)",
                "security": [{}, {"bearer": ["records:write"]}],
                "parameters": [
                  {"name": "Upload-Offset", "in": "header", "required": false, "schema": {"type": "integer", "minimum": 0}},
                  {"name": "Upload-Complete", "in": "header", "required": false, "schema": {"type": "string", "enum": ["?0", "?1"]}},
                  {"name": "Repr-Digest", "in": "header", "required": false, "description": "sha-256=:BASE64: (RFC 9530) of the whole file", "schema": {"type": "string", "pattern": "^sha-256=:[A-Za-z0-9+/]{43}=:$"}}
                ],
                "requestBody": {"required": true, "description": "The file's bytes; the Content-Type sent is stored and served back (application/octet-stream when none)", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
                "responses": {
                  "507": {"$ref": "#/components/responses/QuotaExceeded"},
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
                "operationId": "deleteFile", "summary": "Delete a file (decided by the files' delete rule, default its owner: 403 forbidden_by_rule otherwise, 401 sign_in_required without a token; a file the read rule hides is 404), or with ?upload=ID forget a pending upload",
                "security": [{}, {"bearer": ["records:write"]}],
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
            "headers": {
              "ETag": {"description": "The record's strong entity tag (\"v1\", \"v2\", ...): it changes with every write", "schema": {"type": "string"}},
              "LastModified": {"description": "When it last changed (an HTTP date)", "schema": {"type": "string"}},
              "PrivateCache": {"description": "private, max-age=0: a client's own cache may keep it but revalidates before every use", "schema": {"type": "string"}},
              "PublicCache": {"description": "public, max-age=300", "schema": {"type": "string"}},
              "NoStore": {"description": "no-store", "schema": {"type": "string"}}
            },
            "parameters": {
              \#(AdminConsole.usersOpenAPIParameters)
              "IfMatch": {"name": "If-Match", "in": "header", "required": false, "description": "Strong ETags (comma-separated) or *: the write happens only if the record's current ETag is one of them, else 412 precondition_failed with details.current_etag", "schema": {"type": "string"}},
              "IfNoneMatch": {"name": "If-None-Match", "in": "header", "required": false, "description": "ETags (comma-separated, weak comparison) or *: 304 when the current ETag is one of them", "schema": {"type": "string"}},
              "IfModifiedSince": {"name": "If-Modified-Since", "in": "header", "required": false, "description": "An HTTP date: 304 when the record has not changed since (ignored with If-None-Match)", "schema": {"type": "string"}},
              "IdempotencyKey": {"name": "Idempotency-Key", "in": "header", "required": false, "description": "Makes the POST safe to retry: the first answer per (caller, key) is kept 24 h and replayed with Idempotency-Replayed: true; another request with the key is 422 idempotency_key_reused; an invalid key is 400 invalid_idempotency_key. Anonymous callers share one namespace.", "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7E]+$"}}
            },
            "responses": {
              "IdempotencyInProgress": {"description": "idempotency_in_progress: a call with this Idempotency-Key is still running; retry after Retry-After seconds", "headers": {"Retry-After": {"schema": {"type": "integer"}}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "Tokens": {"description": "access_token, token_type, expires_in, refresh_token, scope", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tokens"}}}},
              "OAuthError": {"description": "RFC 6749 error", "content": {"application/json": {"schema": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}}}}}},
              "Error": {"description": "A failure", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "QuotaExceeded": {"description": "quota_exceeded: the write would take the owner past a quota; details.quota names it (records, record_bytes, file_bytes, pending_uploads). Nothing was written", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
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
                "required": ["status", "version", "schema_version", "saturated"],
                "properties": {"status": {"type": "string", "enum": ["ok"]}, "version": {"type": "string"}, "schema_version": {"type": "integer"}, "saturated": {"type": "array", "description": "The bounded resources this instance holds to their bound (list_scans, connections, password_checks); empty when none", "items": {"type": "string"}}}
              },
              "Readiness": {
                "type": "object",
                "required": ["status", "version", "saturated"],
                "properties": {"status": {"type": "string", "enum": ["ready", "saturated", "unavailable"]}, "version": {"type": "string"}, "saturated": {"type": "array", "items": {"type": "string"}}}
              },
              "HealthUnavailable": {
                "type": "object",
                "required": ["status", "version"],
                "properties": {"status": {"type": "string", "enum": ["unavailable"]}, "version": {"type": "string"}}
              },
              "NewUser": {
                "type": "object",
                "required": ["id", "username"],
                "properties": {"id": {"type": "string"}, "username": {"type": "string"}}
              },
              "Me": {
                "type": "object",
                "description": "With a user: id, username, entitlements, email and email_verified, client_id and scope. Without one (a client credentials token): client_id, scope and user: null",
                "required": ["client_id", "scope"],
                "properties": {"id": {"type": "string"}, "username": {"type": "string"}, "entitlements": {"type": "array", "items": {"type": "string"}}, "email": {"type": ["string", "null"], "description": "The address PATCH /me set; null when none"}, "email_verified": {"type": "boolean", "description": "Whether the link mailed to the address was followed"}, "client_id": {"type": "string"}, "scope": {"type": "string"}, "user": {"const": null, "description": "Sent, as null, when the token has no user"}}
              },
              "UserInfo": {
                "type": "object",
                "description": "OpenID Connect UserInfo claims: sub always, preferred_username with the profile scope",
                "required": ["sub"],
                "properties": {"sub": {"type": "string"}, "preferred_username": {"type": "string"}}
              },
              "JSONWebKeySet": {
                "type": "object",
                "required": ["keys"],
                "properties": {"keys": {"type": "array", "items": {"$ref": "#/components/schemas/JSONWebKey"}}}
              },
              "JSONWebKey": {
                "type": "object",
                "description": "An RSA public key (RFC 7517, RFC 7518 §6.3)",
                "required": ["kty", "kid", "use", "alg", "n", "e"],
                "properties": {"kty": {"type": "string", "enum": ["RSA"]}, "kid": {"type": "string"}, "use": {"type": "string", "enum": ["sig"]}, "alg": {"type": "string"}, "n": {"type": "string"}, "e": {"type": "string"}}
              },
              "OpenIDConfiguration": {
                "type": "object",
                "description": "OpenID Provider Metadata (OpenID Connect Discovery 1.0 §3)",
                "required": ["issuer", "authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri", "response_types_supported", "subject_types_supported", "id_token_signing_alg_values_supported"],
                "properties": {
                  "issuer": {"type": "string"}, "authorization_endpoint": {"type": "string"}, "token_endpoint": {"type": "string"}, "userinfo_endpoint": {"type": "string"}, "jwks_uri": {"type": "string"},
                  "revocation_endpoint": {"type": "string"}, "device_authorization_endpoint": {"type": "string"}, "end_session_endpoint": {"type": "string"},
                  "response_types_supported": {"type": "array", "items": {"type": "string"}}, "response_modes_supported": {"type": "array", "items": {"type": "string"}},
                  "subject_types_supported": {"type": "array", "items": {"type": "string"}}, "id_token_signing_alg_values_supported": {"type": "array", "items": {"type": "string"}},
                  "scopes_supported": {"type": "array", "items": {"type": "string"}}, "claims_supported": {"type": "array", "items": {"type": "string"}},
                  "code_challenge_methods_supported": {"type": "array", "items": {"type": "string"}}, "grant_types_supported": {"type": "array", "items": {"type": "string"}},
                  "token_endpoint_auth_methods_supported": {"type": "array", "items": {"type": "string"}},
                  "claims_parameter_supported": {"type": "boolean"}, "request_parameter_supported": {"type": "boolean"}, "request_uri_parameter_supported": {"type": "boolean"}
                }
              },
              "AuthorizationServerMetadata": {
                "type": "object",
                "description": "OAuth 2.0 Authorization Server Metadata (RFC 8414 §2), with outpost_provider_login_endpoint for POST /auth/login",
                "required": ["issuer", "authorization_endpoint", "token_endpoint", "response_types_supported"],
                "properties": {
                  "issuer": {"type": "string"}, "authorization_endpoint": {"type": "string"}, "token_endpoint": {"type": "string"}, "revocation_endpoint": {"type": "string"},
                  "device_authorization_endpoint": {"type": "string"}, "end_session_endpoint": {"type": "string"}, "jwks_uri": {"type": "string"}, "userinfo_endpoint": {"type": "string"},
                  "outpost_provider_login_endpoint": {"type": "string"},
                  "grant_types_supported": {"type": "array", "items": {"type": "string"}}, "response_types_supported": {"type": "array", "items": {"type": "string"}},
                  "code_challenge_methods_supported": {"type": "array", "items": {"type": "string"}}, "scopes_supported": {"type": "array", "items": {"type": "string"}},
                  "authorization_response_iss_parameter_supported": {"type": "boolean"},
                  "token_endpoint_auth_methods_supported": {"type": "array", "items": {"type": "string"}}, "revocation_endpoint_auth_methods_supported": {"type": "array", "items": {"type": "string"}}
                }
              },
              "DeviceAuthorization": {
                "type": "object",
                "description": "RFC 8628 §3.2",
                "required": ["device_code", "user_code", "verification_uri", "verification_uri_complete", "expires_in", "interval"],
                "properties": {"device_code": {"type": "string"}, "user_code": {"type": "string"}, "verification_uri": {"type": "string"}, "verification_uri_complete": {"type": "string"}, "expires_in": {"type": "integer"}, "interval": {"type": "integer"}}
              },
              "ListFilter": {
                "type": "object",
                "description": "field=value equality filters: the names are field names, never limit, cursor, page, per_page, sort or filter",
                "propertyNames": {"pattern": "^[A-Za-z0-9_-]{1,64}$", "not": {"enum": ["limit", "cursor", "page", "per_page", "sort", "filter"]}},
                "additionalProperties": {"type": "string"},
                "maxProperties": 32
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
              "BatchRequest": {
                "type": "object",
                "required": ["operations"],
                "additionalProperties": false,
                "properties": {"operations": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"$ref": "#/components/schemas/BatchOperation"}}}
              },
              "BatchOperation": {
                "description": "One write: POST creates (body: the fields; no id), PUT replaces (body: the fields), PATCH applies a JSON Merge Patch (body: the patch), DELETE deletes (no body). if_match is the If-Match of the single-record route",
                "oneOf": [
                  {"type": "object", "required": ["method", "type", "body"], "additionalProperties": false, "properties": {"method": {"type": "string", "enum": ["POST"]}, "type": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "body": {"type": "object"}}},
                  {"type": "object", "required": ["method", "type", "id", "body"], "additionalProperties": false, "properties": {"method": {"type": "string", "enum": ["PUT", "PATCH"]}, "type": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "body": {"type": "object"}, "if_match": {"type": "string", "minLength": 1, "maxLength": 256}}},
                  {"type": "object", "required": ["method", "type", "id"], "additionalProperties": false, "properties": {"method": {"type": "string", "enum": ["DELETE"]}, "type": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "if_match": {"type": "string", "minLength": 1, "maxLength": 256}}}
                ]
              },
              "BatchResults": {
                "type": "object",
                "required": ["results"],
                "additionalProperties": false,
                "properties": {"results": {"type": "array", "items": {"$ref": "#/components/schemas/BatchResult"}}}
              },
              "BatchResult": {
                "description": "201 with the created record, 200 with the replaced or patched one, 204 (nothing else) for a delete",
                "oneOf": [
                  {"type": "object", "required": ["status", "record", "etag"], "additionalProperties": false, "properties": {"status": {"type": "integer", "enum": [200, 201]}, "record": {"$ref": "#/components/schemas/Record"}, "etag": {"type": "string"}}},
                  {"type": "object", "required": ["status"], "additionalProperties": false, "properties": {"status": {"type": "integer", "enum": [204]}}}
                ]
              },
              "CursorPage": {
                "type": "object",
                "description": "A keyset page: the answer without page. Exactly these members",
                "required": ["results", "next_cursor", "prev_cursor", "next", "previous"],
                "additionalProperties": false,
                "properties": {
                  "results": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                  "next_cursor": {"type": ["string", "null"]}, "prev_cursor": {"type": ["string", "null"]},
                  "next": {"type": ["string", "null"]}, "previous": {"type": ["string", "null"]}
                }
              },
              "NumberedPage": {
                "type": "object",
                "description": "A page-numbers page: the answer with page. Exactly these members",
                "required": ["results", "page", "per_page", "total", "total_pages"],
                "additionalProperties": false,
                "properties": {
                  "results": {"type": "array", "items": {"$ref": "#/components/schemas/Record"}},
                  "page": {"type": "integer", "minimum": 1}, "per_page": {"type": "integer", "minimum": 1}, "total": {"type": "integer", "minimum": 0}, "total_pages": {"type": "integer", "minimum": 0}
                }
              },
              "File": {
                "type": "object",
                "required": ["name", "size", "content_type", "sha256", "etag", "owner", "updated_at"],
                "properties": {"name": {"type": "string"}, "size": {"type": "integer"}, "content_type": {"type": "string"}, "sha256": {"type": "string"}, "etag": {"type": "string"}, "owner": {"type": ["string", "null"], "description": "The user who uploaded it; null for a file a rule let an anonymous caller upload"}, "updated_at": {"type": "string", "format": "date-time"}}
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
