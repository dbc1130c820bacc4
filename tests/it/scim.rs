//! SCIM provisioning's Zulip-specific behaviour (the conformance tester in
//! `tests/compat/test_scim.py` covers the protocol): the token, Zulip's user shape and errors,
//! filters, deactivation and reactivation (Entra's string booleans too), the last owner, a taken
//! address, what is not served, and the refusals in the sign-in audit.

use crate::support::Server;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const TOKEN: &str = "scim-token-abcdefghijklmnop";

fn start() -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chronicle.toml");
    std::fs::write(&file, format!("[scim]\ntoken = \"{TOKEN}\"\n")).unwrap();
    (
        Server::start_with(&["--config", &file.display().to_string()]),
        dir,
    )
}

async fn scim(
    server: &Server,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{}/scim/v2{path}", server.url))
        .header("Authorization", format!("Bearer {TOKEN}"));
    if let Some(body) = body {
        req = req
            .header("Content-Type", "application/scim+json")
            .body(body.to_string());
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn error(status: u16, detail: &str, scim_type: Option<&str>) -> Value {
    let mut body = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"],
                          "detail": detail, "status": status});
    if let Some(kind) = scim_type {
        body["scimType"] = json!(kind);
    }
    body
}

fn patch(ops: Value) -> Value {
    json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": ops})
}

#[tokio::test]
async fn scim_provisions_accounts_as_zulip_does() {
    let (server, _dir) = start();
    // Without the token, or with another: 401 and nothing else.
    for header in [None, Some("Bearer nope"), Some(TOKEN)] {
        let mut req = reqwest::Client::new().get(format!("{}/scim/v2/Users", server.url));
        if let Some(h) = header {
            req = req.header("Authorization", h);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(resp.text().await.unwrap(), "");
    }

    // A new account: Zulip's shape, 201, its location.
    let (status, made) = scim(
        &server,
        Method::POST,
        "/Users",
        Some(json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "ana@example.com", "name": {"formatted": "Ana Lima"}, "active": true,
        "role": "moderator", "password": "ignored-password"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let id = made["id"].as_str().unwrap().to_owned();
    let location = format!("{}/scim/v2/Users/{id}", server.url);
    assert_eq!(made["meta"]["location"], location.as_str());
    let created = made["meta"]["created"].clone();
    assert_eq!(
        made,
        json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "id": id,
               "userName": "ana@example.com", "name": {"formatted": "Ana Lima"},
               "displayName": "Ana Lima", "role": "moderator", "active": true,
               "meta": {"resourceType": "User", "created": created, "lastModified": created,
                        "location": location}})
    );
    // The password was not taken: she signs in through the organization's provider.
    let (status, _) = server
        .api(None)
        .post(
            "/fetch_api_key",
            &[
                ("username", "ana@example.com"),
                ("password", "ignored-password"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Zulip's refusals.
    let (status, body) = scim(
        &server,
        Method::POST,
        "/Users",
        Some(json!({
        "userName": "ANA@example.com", "name": {"formatted": "Ana Again"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["scimType"], "uniqueness");
    let (_, body) = scim(
        &server,
        Method::POST,
        "/Users",
        Some(json!({"userName": "bo@example.com"})),
    )
    .await;
    assert_eq!(body, error(400, "Must specify name.formatted, name.givenName or name.familyName when creating a new user", None));
    let (_, body) = scim(
        &server,
        Method::POST,
        "/Users",
        Some(json!({
        "userName": "bo@example.com", "name": {"formatted": "Bo"}, "active": false})),
    )
    .await;
    assert_eq!(body, error(400, "New user must have active=True", None));
    let (_, body) = scim(
        &server,
        Method::POST,
        "/Users",
        Some(json!({
        "userName": "bo@example.com", "name": {"formatted": "Bo"}, "role": "wrongrole"})),
    )
    .await;
    assert_eq!(body, error(400, "Invalid role: wrongrole. Valid values are: [\"owner\", \"administrator\", \"moderator\", \"member\", \"guest\"]", None));
    let (status, body) = scim(&server, Method::DELETE, &format!("/Users/{id}"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["detail"], "DELETE operation not supported. Use PUT or PATCH to modify the \"active\" attribute instead.");
    let (status, _) = scim(&server, Method::GET, "/Users/999", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = scim(&server, Method::GET, "/Bulk", None).await;
    assert_eq!(status, StatusCode::NOT_IMPLEMENTED);
    let (status, _) = scim(&server, Method::GET, "/Nonsense", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = scim(&server, Method::POST, "/Users", Some(json!([1, 2]))).await;
    assert_eq!(
        (status, &body["scimType"]),
        (StatusCode::BAD_REQUEST, &json!("invalidSyntax"))
    );

    // Filters, the whole grammar, and paging; a broken filter says why.
    let (_, list) = scim(
        &server,
        Method::GET,
        "/Users?filter=userName%20ew%20%22%40example.com%22%20and%20role%20eq%20%22moderator%22",
        None,
    )
    .await;
    assert_eq!(
        (
            list["totalResults"].clone(),
            list["Resources"][0]["id"].clone()
        ),
        (json!(1), json!(id))
    );
    let (_, all) = scim(&server, Method::GET, "/Users?startIndex=2&count=1", None).await;
    assert_eq!(
        (
            all["totalResults"].clone(),
            all["itemsPerPage"].clone(),
            all["startIndex"].clone()
        ),
        (json!(2), json!(1), json!(2))
    );
    let (status, body) = scim(&server, Method::GET, "/Users?filter=userName%20eq", None).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            error(
                400,
                "Invalid filter/search query: expected a value at the end",
                Some("invalidFilter")
            )
        )
    );
    let (status, _) = scim(&server, Method::GET, "/Users?startIndex=0", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, found) = scim(
        &server,
        Method::POST,
        "/Users/.search",
        Some(json!({
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
        "filter": "name.formatted co \"lima\""})),
    )
    .await;
    assert_eq!(found["totalResults"], 1, "{found}");

    // Only the attributes asked for (id and schemas always), or all but some.
    let (_, only) = scim(
        &server,
        Method::GET,
        &format!("/Users/{id}?attributes=userName,name.formatted"),
        None,
    )
    .await;
    assert_eq!(
        only,
        json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "id": id,
                             "userName": "ana@example.com", "name": {"formatted": "Ana Lima"}})
    );
    let (_, without) = scim(
        &server,
        Method::GET,
        "/Users?excludedAttributes=meta,name&count=1",
        None,
    )
    .await;
    let first = without["Resources"][0].as_object().unwrap();
    assert!(
        first.get("meta").is_none()
            && first.get("name").is_none()
            && first.contains_key("userName"),
        "{without}"
    );
    let (_, found) = scim(
        &server,
        Method::POST,
        "/Users/.search",
        Some(json!({
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
        "filter": "userName eq \"ana@example.com\"", "attributes": ["active"]})),
    )
    .await;
    assert_eq!(
        found["Resources"][0],
        json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "id": id, "active": true})
    );

    // Entra ID's way: "Replace" with string booleans, and name parts.
    let (status, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([
        {"op": "Replace", "path": "active", "value": "False"},
        {"op": "Add", "path": "name.familyName", "value": "Souza"}]))),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["active"].clone(), body["name"]["formatted"].clone()),
        (json!(false), json!("Ana Souza"))
    );
    let owner = server.api(Some(&server.owner()));
    let (_, user) = owner.get(&format!("/users/{id}"), &[]).await;
    assert_eq!(
        (
            user["user"]["is_active"].clone(),
            user["user"]["full_name"].clone()
        ),
        (json!(false), json!("Ana Souza"))
    );
    // Entra's order of name parts: each part kept whole, the rest of the name as it was.
    let (_, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([
        {"op": "Replace", "path": "name.givenName", "value": "Mary Ann"},
        {"op": "Replace", "path": "name.familyName", "value": "Smith"}]))),
    )
    .await;
    assert_eq!(body["name"]["formatted"], "Mary Ann Smith", "{body}");
    let (_, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([
        {"op": "replace", "path": "name", "value": {"familyName": "Souza"}}]))),
    )
    .await;
    assert_eq!(body["name"]["formatted"], "Mary Souza", "{body}");
    // An extension's attribute is not the core one of the same name.
    let (status, body) = scim(&server, Method::PATCH, &format!("/Users/{id}"), Some(patch(json!([
        {"op": "replace", "path": "urn:ietf:params:scim:schemas:extension:custom:2.0:User:active", "value": false}])))).await;
    assert_eq!(
        (status, body["scimType"].clone()),
        (StatusCode::BAD_REQUEST, json!("invalidPath"))
    );
    // Okta's way: PUT with the whole resource; the address cannot change.
    let (status, body) = scim(&server, Method::PUT, &format!("/Users/{id}"), Some(json!({
        "userName": "ana@example.com", "name": {"formatted": "Ana Lima"}, "active": true, "role": "member"}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["active"].clone(), body["role"].clone()),
        (json!(true), json!("member"))
    );
    let (queue, _) =
        crate::realtime::register(&owner, &[("event_types", r#"["realm_user"]"#)]).await;
    let (status, body) = scim(
        &server,
        Method::PUT,
        &format!("/Users/{id}"),
        Some(json!({
        "userName": "ana.lima@example.com", "name": {"formatted": "Ana Lima"}})),
    )
    .await;
    assert_eq!(
        (status, body["userName"].clone()),
        (StatusCode::OK, json!("ana.lima@example.com")),
        "{body}"
    );
    // The owner, who sees addresses, heard of it as Zulip tells it.
    let id_number: u64 = id.parse().unwrap();
    let heard: Vec<Value> = crate::realtime::drain(&owner, &queue)
        .await
        .into_iter()
        .filter(|e| e["type"] == "realm_user" && e["person"]["user_id"] == id_number)
        .map(|e| e["person"].clone())
        .collect();
    assert_eq!(
        heard,
        [
            json!({"user_id": id_number, "delivery_email": "ana.lima@example.com"}),
            json!({"user_id": id_number, "new_email": "ana.lima@example.com"})
        ]
    );
    // The organization sees the new address (the owner may see addresses); the old one is free.
    let (_, user) = owner.get(&format!("/users/{id}"), &[]).await;
    assert_eq!(
        user["user"]["delivery_email"], "ana.lima@example.com",
        "{user}"
    );
    let (status, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([
        {"op": "replace", "path": "userName", "value": "owner@chronicle.local"}]))),
    )
    .await;
    assert_eq!(
        (status, body["scimType"].clone()),
        (StatusCode::CONFLICT, json!("uniqueness")),
        "{body}"
    );
    let (status, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([
        {"op": "replace", "path": "userName", "value": "not an address"}]))),
    )
    .await;
    assert_eq!(
        (status, body["scimType"].clone()),
        (StatusCode::BAD_REQUEST, json!("invalidValue")),
        "{body}"
    );
    let (status, _) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([
        {"op": "replace", "path": "userName", "value": "ana@example.com"}]))),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([{"op": "remove"}]))),
    )
    .await;
    assert_eq!(body["scimType"], "noTarget");
    let (_, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{id}"),
        Some(patch(json!([{"op": "move", "path": "active"}]))),
    )
    .await;
    assert_eq!(body["detail"], "Unknown PATCH op \"move\"");

    // The last owner stays.
    let (_, me) = owner.get("/users/me", &[]).await;
    let owner_id = me["user_id"].to_string();
    let (status, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Users/{owner_id}"),
        Some(patch(json!([
        {"op": "replace", "value": {"active": false}}]))),
    )
    .await;
    assert_eq!(
        (status, body["detail"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Cannot deactivate the only organization owner")
        )
    );

    // Every change is an ordinary event by the server; refusals are in the sign-in audit.
    let (_, events) = owner
        .get(
            "/admin/events",
            &[("type", "UserDeactivated,UserReactivated")],
        )
        .await;
    let actors: Vec<Value> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["actor"].clone())
        .collect();
    assert_eq!(actors, [Value::Null, Value::Null], "{events}");
    let audit = std::fs::read_to_string(server.dir.join("sign-in-audit.jsonl")).unwrap();
    let scim_lines: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["method"] == "scim")
        .collect();
    assert!(
        scim_lines.iter().any(|l| l["outcome"] == "UNAUTHORIZED"),
        "{audit}"
    );
    assert!(
        scim_lines.iter().any(|l| l["outcome"] == "BAD_REQUEST"),
        "{audit}"
    );
    assert!(!audit.contains(TOKEN));

    // Without [scim], the addresses are not there, and nothing is recorded.
    let plain = Server::start();
    let resp = reqwest::Client::new()
        .get(format!("{}/scim/v2/Users", plain.url))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let audit = std::fs::read_to_string(plain.dir.join("sign-in-audit.jsonl")).unwrap_or_default();
    assert!(!audit.contains("scim"), "{audit}");
}

#[tokio::test]
async fn scim_manages_groups_as_zulip_does() {
    let (server, _dir) = start();
    let (ana, _) = server.create_member("ana@example.com", "Ana").await;
    let (bo, _) = server.create_member("bo@example.com", "Bo").await;
    let (status, made) = scim(
        &server,
        Method::POST,
        "/Groups",
        Some(json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
        "displayName": "Design", "members": [{"value": ana.to_string()}]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(
        made,
        json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "id": id,
               "displayName": "Design",
               "members": [{"value": ana.to_string(), "display": "Ana", "type": "User",
                            "$ref": format!("{}/scim/v2/Users/{ana}", server.url)}],
               "meta": {"resourceType": "Group",
                        "location": format!("{}/scim/v2/Groups/{id}", server.url)}})
    );
    // The group as the organization sees it: made from SCIM, managed by nobody else.
    let owner = server.api(Some(&server.owner()));
    let (_, groups) = owner.get("/user_groups", &[]).await;
    let group = groups["user_groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "Design")
        .unwrap()
        .clone();
    assert_eq!(
        (group["description"].clone(), group["members"].clone()),
        (json!("Created from SCIM"), json!([ana]))
    );

    // Zulip's refusals.
    let (status, body) = scim(
        &server,
        Method::POST,
        "/Groups",
        Some(json!({"displayName": "Design"})),
    )
    .await;
    assert_eq!(
        (status, body),
        (
            StatusCode::CONFLICT,
            error(409, "Group name already in use: Design", Some("uniqueness"))
        )
    );
    let (_, body) = scim(
        &server,
        Method::POST,
        "/Groups",
        Some(json!({"displayName": "role:mine"})),
    )
    .await;
    assert_eq!(
        body,
        error(400, "User group name cannot start with 'role:'.", None)
    );
    let (_, body) = scim(
        &server,
        Method::POST,
        "/Groups",
        Some(json!({"displayName": "X", "members": [{"value": "987654"}]})),
    )
    .await;
    assert_eq!(
        body,
        error(400, "Invalid user ids found in the request: {987654}", None)
    );
    let (_, list) = scim(
        &server,
        Method::GET,
        "/Groups?filter=displayName%20eq%20%22role%3Aowners%22",
        None,
    )
    .await;
    let owners = list["Resources"][0]["id"].as_str().unwrap().to_owned();
    let (_, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Groups/{owners}"),
        Some(patch(json!([
        {"op": "add", "path": "members", "value": [{"value": bo.to_string()}]}]))),
    )
    .await;
    assert_eq!(
        body,
        error(400, "Group role:owners can't be managed by SCIM.", None)
    );

    // Members added, removed the Okta way, renamed; replaced whole by PUT.
    let (status, body) = scim(
        &server,
        Method::PATCH,
        &format!("/Groups/{id}"),
        Some(patch(json!([
        {"op": "add", "path": "members", "value": [{"value": bo.to_string()}]},
        {"op": "remove", "path": format!("members[value eq \"{ana}\"]")},
        {"op": "Replace", "value": {"id": id, "displayName": "Product design"}}]))),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (
            body["displayName"].clone(),
            body["members"][0]["value"].clone(),
            body["members"].as_array().unwrap().len()
        ),
        (json!("Product design"), json!(bo.to_string()), 1)
    );
    let (_, body) = scim(&server, Method::PUT, &format!("/Groups/{id}"), Some(json!({
        "displayName": "Product design", "members": [{"value": ana.to_string()}, {"value": bo.to_string()}]}))).await;
    assert_eq!(body["members"].as_array().unwrap().len(), 2, "{body}");
    let (_, events) = owner
        .get("/admin/events", &[("type", "UserGroupMembersChanged")])
        .await;
    assert_eq!(events["events"].as_array().unwrap().len(), 2, "{events}");

    // Deleted: deactivated, no longer listed.
    let resp = reqwest::Client::new()
        .delete(format!("{}/scim/v2/Groups/{id}", server.url))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let (status, _) = scim(&server, Method::GET, &format!("/Groups/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = scim(
        &server,
        Method::GET,
        "/Groups?filter=displayName%20eq%20%22Product%20design%22",
        None,
    )
    .await;
    assert_eq!(list["totalResults"], 0);
}
