//! The HTTP layer: application state, the whole route table in one function, and the handlers
//! that turn every routing failure into Zulip's error JSON.
//!
//! Handlers are thin: an `Auth` extractor (which exists only after Basic auth succeeded),
//! `Params` for the parameters, then a command on the engine or a read of the projections.

pub mod admin;
pub mod auth;
pub mod avatars;
pub mod bots;
pub mod calls;
pub mod channels;
pub mod desktop_flow;
pub mod devices;
pub mod drafts;
pub mod email_change;
pub mod emoji;
pub mod events;
pub mod exports;
pub mod folders;
pub mod forward;
pub mod health;
pub mod integrations;
pub mod invitations;
pub mod linkifiers;
pub mod messages;
pub mod params;
pub mod password_reset;
pub mod playgrounds;
pub mod presence;
pub mod profile_fields;
pub mod rate_limit;
pub mod realm;
pub mod realm_domains;
pub mod saml;
pub mod scheduled;
pub mod scim;
pub mod sealed;
pub mod second_factor;
pub mod server_settings;
pub mod signup;
pub mod sso;
pub mod starting;
pub mod subscriptions;
pub mod two_factor;
pub mod unsubscribe;
pub mod uploads;
pub mod user_groups;
pub mod users;
pub mod webclient;
pub mod wire;

use crate::auth::ServerSecret;
use crate::engine::Engine;
use crate::error::{ApiError, ApiResult};
use actix_web::body::BoxBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse, ResponseError};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

pub use crate::render::Site;
pub use auth::Auth;
pub use params::Params;

/// Everything a handler may touch.
pub struct AppState {
    pub engine: Arc<Engine>,
    pub secret: ServerSecret,
    pub site: Site,
    pub queues: Arc<crate::realtime::Queues>,
    /// Long-poll heartbeat interval; `None` for Zulip's 45–55 s.
    pub heartbeat: Option<std::time::Duration>,
    /// Where emails are written when there is no SMTP relay, or it fails (`DATA_DIR/outbox`).
    pub outbox: Option<std::path::PathBuf>,
    /// Mobile push through Zulip's push notification service, when configured.
    pub push: Option<crate::notify::PushConfig>,
    /// The domain of the email gateway's addresses, when it is configured.
    pub email_gateway_domain: Option<String>,
    /// The SMTP relay emails go through, when configured.
    pub smtp: Option<crate::notify::relay::Smtp>,
    /// Requests per user, per address and failed logins per username (`rate_limit`).
    pub rate_limiter: Arc<rate_limit::RateLimiter>,
    /// How long a client may take to send a request.
    pub client_timeouts: ClientTimeouts,
    /// Uploaded files' bytes.
    pub uploads: crate::uploads::UploadStore,
    /// In a cluster: the writer's lease and how to pass writes on to it (`forward`).
    pub cluster: Option<Arc<forward::Cluster>>,
    /// Who looked through the inspector (`access_audit`).
    pub access_audit: Arc<crate::access_audit::AccessAudit>,
    /// Every sign-in attempt, accepted or refused (`access_audit::SignIn`).
    pub sign_in_audit: Arc<crate::access_audit::AccessAudit>,
    /// The bearer token that opens `/metrics` on this address (`None`: not served here).
    pub metrics_token: Option<String>,
    /// The data directory (for the snapshots' age).
    pub data_dir: std::path::PathBuf,
    /// Bounds on the password hashing requests cause.
    pub password_work: rate_limit::PasswordWork,
    /// The still images of animated custom emoji, each made once.
    pub emoji_stills: emoji::EmojiStills,
    /// The ways of signing in besides passwords.
    pub identity: crate::identity::Identity,
    /// Requests to servers the operator configured (BigBlueButton) go through it.
    pub outgoing: Arc<crate::outgoing::Guard>,
}

/// How long a client may take to send its request, so that slow or stalled clients cannot
/// hold connections and buffers open.
#[derive(Debug, Clone, Copy)]
pub struct ClientTimeouts {
    /// For the request line and headers (actix answers a bare 408 and closes).
    pub head: std::time::Duration,
    /// For the whole body once the head is in (a Zulip-shaped 408 `REQUEST_TIMEOUT`).
    pub body: std::time::Duration,
}

impl Default for ClientTimeouts {
    /// 5 s for the head (actix's own default) and 30 s for the body: a 6 MiB upload at
    /// about 200 KB/s still fits.
    fn default() -> Self {
        ClientTimeouts {
            head: std::time::Duration::from_secs(5),
            body: std::time::Duration::from_secs(30),
        }
    }
}

impl AppState {
    /// The tail of most write handlers: runs `command` as the authenticated user and, once its
    /// events are durable, answers Zulip's empty success (with any ignored parameters); the
    /// command's own reply is not part of the answer.
    pub async fn answer<R, F>(
        &self,
        auth: &Auth,
        params: Params,
        command: F,
    ) -> ApiResult<HttpResponse>
    where
        F: Fn(
                &crate::projections::Projections,
                &crate::commands::Ctx,
            ) -> ApiResult<crate::commands::Decision<R>>
            + Send
            + 'static,
        R: Send + 'static,
    {
        self.engine.execute(Some(auth.user_id), command).await?;
        Ok(params.success(serde_json::json!({})))
    }

    /// Queues a login alert to `user_id` about the sign-in `req` made (when they want one:
    /// `commands::notifications::login_alert`), off the request: the sign-in does not wait.
    pub fn alert_login(&self, req: &actix_web::HttpRequest, user_id: crate::ids::UserId) {
        let (client, address) = login_origin(req, self);
        let engine = self.engine.clone();
        actix_web::rt::spawn(async move {
            let queued = engine
                .execute(None, move |state, ctx| {
                    Ok(crate::commands::Decision::events(
                        crate::commands::notifications::login_alert(
                            state, ctx, user_id, &client, &address,
                        ),
                    ))
                })
                .await;
            if let Err(error) = queued {
                tracing::warn!(%error, user = user_id.0, "queueing a login alert failed");
            }
        });
    }

    /// Delivers an email: through the SMTP relay when one is configured (off the request, after
    /// the change it reports is durable), else, or when the relay refuses it, into the outbox
    /// (`DATA_DIR/outbox/`, one `.eml` file each, `tag` in its name) for an administrator to read
    /// or forward. Failures are logged, never the content.
    pub fn send_mail(&self, to: &str, subject: &str, body: &str, tag: &str) {
        if let Some(smtp) = &self.smtp {
            // Through the relay, off the request; a mail the relay refuses lands in the outbox.
            let smtp = smtp.clone();
            let outbox = self.outbox.clone();
            let (to, subject, body, tag) = (
                to.to_owned(),
                subject.to_owned(),
                body.to_owned(),
                tag.to_owned(),
            );
            actix_web::rt::spawn(async move {
                let message = to
                    .parse()
                    .map_err(|e: lettre::address::AddressError| e.to_string())
                    .and_then(|to| {
                        lettre::Message::builder()
                            .from(lettre::message::Mailbox::new(
                                Some("Chronicle".into()),
                                smtp.from_address.clone(),
                            ))
                            .to(to)
                            .subject(subject.clone())
                            .body(body.clone())
                            .map_err(|e| e.to_string())
                    });
                let sent = match message {
                    Ok(message) => smtp.send(message).await.map_err(|e| e.reason),
                    Err(e) => Err(e),
                };
                if let Err(error) = sent {
                    tracing::warn!(%tag, %error, "the SMTP relay did not take an email; it goes to the outbox");
                    write_outbox(outbox.as_deref(), &to, &subject, &body, &tag);
                }
            });
            return;
        }
        write_outbox(self.outbox.as_deref(), to, subject, body, tag);
    }
}

/// What a login alert says of a sign-in: the client's own description (`User-Agent`) and the
/// address it came from.
pub fn login_origin(req: &actix_web::HttpRequest, state: &AppState) -> (String, String) {
    let client = req
        .headers()
        .get(actix_web::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let address = auth::client_ip(req, state)
        .map_or_else(|| "Unknown IP address".to_owned(), |ip| ip.to_string());
    (client, address)
}

/// Writes an email to the outbox directory (one `.eml` file each).
fn write_outbox(outbox: Option<&std::path::Path>, to: &str, subject: &str, body: &str, tag: &str) {
    let Some(outbox) = outbox else {
        return;
    };
    let mail = format!("To: {to}\nSubject: {subject}\n\n{body}");
    let name = crate::notify::relay::outbox_file_name(tag);
    let written =
        std::fs::create_dir_all(outbox).and_then(|()| std::fs::write(outbox.join(&name), mail));
    if let Err(error) = written {
        tracing::warn!(%tag, %error, "could not write an email to the outbox");
    }
}

/// Registers one path with its methods; every other method gets Zulip's 405 body.
macro_rules! endpoint {
    ($cfg:expr, $path:expr, $($method:ident => $handler:expr),+ $(,)?) => {
        $cfg.service(
            web::resource($path)
                .app_data(Pattern($path))
                $(.route(web::$method().to($handler)))+
                .default_service(web::to(|| async {
                    method_not_allowed(&[$(stringify!($method)),+])
                })),
        )
    };
}

/// The pattern a resource was registered under, kept with it so that the metrics read the
/// route of an answered request back (`HttpRequest::match_pattern` matches the path against
/// the route table again, which costs more than most requests).
#[derive(Clone, Copy)]
struct Pattern(&'static str);

/// The scope a path is under (the part of a route's pattern above the resource's own).
fn scope_of(path: &str) -> &'static str {
    ["/api/v1", "/json", "/scim/v2"]
        .into_iter()
        .find(|scope| {
            path.strip_prefix(scope)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .unwrap_or("")
}

/// The whole route table.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v1")
            .configure(api_routes)
            .configure(|api| {
                // Incoming webhooks take any method, as Zulip's, and larger bodies.
                api.service(
                    web::resource("/external/{integration}")
                        .app_data(web::PayloadConfig::new(integrations::MAX_PAYLOAD_BYTES))
                        .route(web::route().to(integrations::incoming_webhook)),
                );
            })
            .default_service(web::to(not_found)),
    );
    // SCIM provisioning, for the organization's identity provider (its bearer token).
    cfg.service(
        web::scope("/scim/v2")
            .app_data(web::PayloadConfig::new(scim::MAX_BODY_BYTES))
            .configure(|scim_routes| {
                endpoint!(scim_routes, "/Users", get => scim::list_users, post => scim::create_user);
                endpoint!(scim_routes, "/Users/.search", post => scim::search_users);
                endpoint!(scim_routes, "/Users/{id}",
                    get => scim::get_user,
                    put => scim::replace_user,
                    patch => scim::patch_user,
                    delete => scim::delete_user);
                endpoint!(scim_routes, "/ServiceProviderConfig", get => scim::service_provider_config);
                endpoint!(scim_routes, "/ResourceTypes", get => scim::resource_types);
                endpoint!(scim_routes, "/ResourceTypes/{id}", get => scim::resource_types);
                endpoint!(scim_routes, "/Schemas", get => scim::schemas);
                endpoint!(scim_routes, "/Schemas/{id}", get => scim::schemas);
                endpoint!(scim_routes, "/Groups", get => scim::list_groups, post => scim::create_group);
                endpoint!(scim_routes, "/Groups/.search", post => scim::search_groups);
                endpoint!(scim_routes, "/Groups/{id}",
                    get => scim::get_group,
                    put => scim::replace_group,
                    patch => scim::patch_group,
                    delete => scim::delete_group);
                for unserved in ["/Bulk", "/Me", "/.search"] {
                    scim_routes.route(unserved, web::route().to(scim::not_implemented));
                }
            })
            .default_service(web::to(scim::no_such_endpoint))
            .wrap_fn(scim::guard),
    );
    // The same API for the web client, authenticated by its session cookie, with the CSRF
    // check in front (`webclient::guard`), and the routes only browsers use.
    cfg.service(
        web::scope("/json")
            .configure(|json| {
                endpoint!(json, "/logout", post => webclient::logout);
                endpoint!(json, "/sessions", get => webclient::get_sessions);
                endpoint!(json, "/sessions/{session_id}", delete => webclient::end_session);
                endpoint!(json, "/users/me/two_factor",
                    get => two_factor::status,
                    post => two_factor::enable,
                    delete => two_factor::disable_own);
                endpoint!(json, "/users/me/two_factor/setup", post => two_factor::setup);
                endpoint!(json, "/users/me/two_factor/qr.svg", get => two_factor::setup_qr);
                endpoint!(json, "/users/me/two_factor/backup_codes",
                    post => two_factor::renew_backup_codes);
            })
            .configure(api_routes)
            .default_service(web::to(not_found))
            .wrap_fn(webclient::guard),
    );
    endpoint!(cfg, "/", get => webclient::app_page);
    endpoint!(cfg, "/login/", get => webclient::login_page, post => webclient::login);
    endpoint!(cfg, "/login", get => webclient::login_page, post => webclient::login);
    endpoint!(cfg, "/static/web/{path:.*}", get => webclient::asset);
    endpoint!(cfg, "/accounts/password/reset/",
        get => password_reset::reset_page, post => password_reset::request_reset);
    endpoint!(cfg, "/accounts/password/reset/done/", get => password_reset::reset_done_page);
    endpoint!(cfg, "/accounts/login/jwt/", post => webclient::jwt_login);
    endpoint!(cfg, "/login/two_factor/", post => two_factor::login_code);
    endpoint!(cfg, "/login/two_factor/setup", get => two_factor::login_setup);
    endpoint!(cfg, "/login/two_factor/qr.svg", get => two_factor::login_qr);
    endpoint!(cfg, "/accounts/login/social/oidc", get => sso::start_first);
    endpoint!(cfg, "/accounts/register/social/oidc", get => sso::start_first);
    endpoint!(cfg, "/accounts/login/social/oidc/{name}", get => sso::start_named);
    endpoint!(cfg, "/accounts/register/social/oidc/{name}", get => sso::start_named);
    endpoint!(cfg, "/complete/oidc/", get => sso::complete);
    endpoint!(cfg, "/accounts/login/social/saml/{name}", get => saml::start);
    endpoint!(cfg, "/accounts/register/social/saml/{name}", get => saml::start);
    endpoint!(cfg, "/complete/saml/", post => saml::complete);
    endpoint!(cfg, "/saml/metadata.xml", get => saml::metadata);
    endpoint!(cfg, "/accounts/login/subdomain/{token}", get => desktop_flow::log_in_with_token);
    endpoint!(cfg, "/calls/bigbluebutton/join", get => calls::join_bigbluebutton);
    endpoint!(cfg, "/register/", get => signup::signup_page);
    endpoint!(cfg, "/accounts/unsubscribe/done/", get => unsubscribe::done_page);
    endpoint!(cfg, "/accounts/unsubscribe/{kind}/{key}",
        get => unsubscribe::unsubscribe, post => unsubscribe::unsubscribe);
    endpoint!(cfg, "/accounts/home/", post => signup::request_link);
    endpoint!(cfg, "/accounts/send_confirm/", get => signup::sent_page);
    endpoint!(cfg, "/accounts/do_confirm/{key}",
        get => signup::confirm_page, post => signup::create_account);
    endpoint!(cfg, "/accounts/confirm_new_email/{key}/", get => email_change::confirm);
    endpoint!(cfg, "/accounts/password/reset/{user_id}/{token}/",
        get => password_reset::confirm_page, post => password_reset::set_password);
    endpoint!(cfg, "/avatar/realm/logo", get => avatars::get_realm_logo);
    endpoint!(cfg, "/avatar/realm/night_logo", get => avatars::get_realm_logo);
    endpoint!(cfg, "/avatar/{key}", get => avatars::get_avatar);
    endpoint!(cfg, "/avatar/{key}/medium", get => avatars::get_avatar_medium);
    endpoint!(cfg, "/metrics", get => health::metrics_with_token);
    endpoint!(cfg, "/health", get => health::health);
    endpoint!(cfg, "/ready", get => health::ready);
    endpoint!(cfg, "/admin/", get => admin::audit_page);
    endpoint!(cfg, "/admin", get => admin::audit_page);
    endpoint!(cfg, "/admin/audit.js", get => admin::audit_script);
    endpoint!(cfg, "/admin/audit.css", get => admin::audit_styles);
    endpoint!(cfg, "/user_avatars/{realm_id}/emoji/images/still/{file}",
        get => emoji::get_emoji_still);
    endpoint!(cfg, "/user_avatars/{realm_id}/emoji/images/{file}", get => emoji::get_emoji_image);
    endpoint!(cfg, "/static/generated/emoji/{file}", get => emoji::get_emoji_data);
    // Before the realm-id form: `temporary` is not a realm id.
    endpoint!(cfg, "/user_uploads/temporary/{token}/{name}", get => uploads::download_temporary);
    endpoint!(cfg, "/user_uploads/{realm_id}/{path:.*}", get => uploads::download);
    endpoint!(cfg, "/internal/uploads/{sha256}", get => forward::internal_upload);
    endpoint!(cfg, "/join/{key}/",
        get => invitations::registration_form,
        post => invitations::register_account);
    endpoint!(cfg, "/join/{key}",
        get => invitations::registration_form,
        post => invitations::register_account);
}

/// Every route of the API, under `/api/v1` for API clients and `/json` for the web client.
fn api_routes(api: &mut web::ServiceConfig) {
    // The routes nearly every request takes come first: actix tries a scope's routes in turn,
    // each pattern with a part being a regular expression to run, and 47 of them stood before
    // `/events` (matching was about 8 % of the server's time in the people scenario's
    // profile). None of these matches a path a later route is for.
    endpoint!(api, "/register", post => events::register);
    endpoint!(api, "/events",
        get => events::get_events,
        delete => events::delete_queue);
    endpoint!(api, "/messages",
        get => messages::get_messages,
        post => messages::send_message);
    endpoint!(api, "/messages/flags", post => messages::update_message_flags);
    endpoint!(api, "/typing", post => messages::set_typing_status);
    endpoint!(api, "/users/me/presence", post => presence::update_presence);
    endpoint!(api, "/server_settings", get => server_settings::get_server_settings);
    endpoint!(api, "/fetch_api_key", post => second_factor::fetch_api_key);
    endpoint!(api, "/jwt/fetch_api_key", post => auth::jwt_fetch_api_key);
    endpoint!(api, "/users/me", get => users::get_own_user, delete => users::deactivate_own_user);
    endpoint!(api, "/users/me/api_key/regenerate", post => auth::regenerate_api_key);
    endpoint!(api, "/users/{user_id}/two_factor", delete => two_factor::disable_for);
    endpoint!(api, "/settings", patch => users::update_settings);
    // The legacy form the Python client's update_notification_settings uses.
    endpoint!(api, "/settings/notifications", patch => users::update_settings);
    endpoint!(api, "/users",
        get => users::get_users,
        post => users::create_user);
    endpoint!(api, "/users/{user_id}",
        get => users::get_user,
        patch => users::update_user,
        delete => users::deactivate_user);
    endpoint!(api, "/users/{user_id}/reactivate", post => users::reactivate_user);
    endpoint!(api, "/users/{user_id_or_email}/presence",
        get => presence::get_user_presence);
    endpoint!(api, "/users/me/status", post => presence::update_status);
    endpoint!(api, "/users/me/alert_words",
        get => users::get_alert_words,
        post => users::add_alert_words,
        delete => users::remove_alert_words);
    endpoint!(api, "/users/me/avatar",
        post => avatars::upload_avatar,
        delete => avatars::delete_avatar);
    endpoint!(api, "/users/me/muted_users/{muted_user_id}",
        post => users::mute_user,
        delete => users::unmute_user);
    endpoint!(api, "/users/{user_id}/status",
        get => presence::get_status,
        post => presence::update_status_for_user);
    endpoint!(api, "/users/{user_id}/channels", get => subscriptions::get_user_channels);
    endpoint!(api, "/bots",
        get => bots::get_bots,
        post => bots::create_bot);
    endpoint!(api, "/bots/{bot_id}",
        patch => bots::update_bot,
        delete => bots::deactivate_bot);
    endpoint!(api, "/bots/{bot_id}/api_key", get => bots::get_bot_key);
    endpoint!(api, "/bots/{bot_id}/api_key/regenerate",
        post => bots::regenerate_bot_key);
    endpoint!(api, "/bot_storage",
        get => bots::get_storage,
        put => bots::update_storage,
        delete => bots::remove_storage);
    endpoint!(api, "/invites",
        get => invitations::get_invites,
        post => invitations::invite_users);
    endpoint!(api, "/invites/multiuse", post => invitations::create_multiuse_invite);
    endpoint!(api, "/invites/multiuse/{invite_id}",
        delete => invitations::revoke_multiuse_invite);
    endpoint!(api, "/invites/{invite_id}", delete => invitations::revoke_user_invite);
    endpoint!(api, "/invites/{invite_id}/resend", post => invitations::resend_invite);
    endpoint!(api, "/realm", patch => realm::update_realm);
    endpoint!(api, "/calls/bigbluebutton/create", get => calls::create_bigbluebutton);
    endpoint!(api, "/calls/nextcloud_talk/create", post => calls::create_nextcloud_talk);
    endpoint!(api, "/calls/constructorgroups/create", post => calls::create_constructor_groups);
    endpoint!(api, "/realm/icon",
        post => avatars::upload_realm_icon, delete => avatars::delete_realm_icon);
    endpoint!(api, "/realm/logo",
        post => avatars::upload_realm_logo, delete => avatars::delete_realm_logo);
    endpoint!(api, "/realm/test_welcome_bot_custom_message",
        post => realm::test_welcome_bot_custom_message);
    endpoint!(api, "/realm/user_settings_defaults",
        patch => realm::update_user_settings_defaults);
    endpoint!(api, "/realm/linkifiers",
        get => linkifiers::get_linkifiers,
        patch => linkifiers::reorder_linkifiers);
    endpoint!(api, "/realm/filters", post => linkifiers::add_linkifier);
    endpoint!(api, "/realm/domains",
        get => realm_domains::list_domains, post => realm_domains::add_domain);
    endpoint!(api, "/realm/domains/{domain}",
        patch => realm_domains::change_domain, delete => realm_domains::remove_domain);
    endpoint!(api, "/realm/playgrounds", post => playgrounds::add_playground);
    endpoint!(api, "/realm/playgrounds/{playground_id}",
        delete => playgrounds::remove_playground);
    endpoint!(api, "/realm/filters/{filter_id}",
        patch => linkifiers::update_linkifier,
        delete => linkifiers::remove_linkifier);
    endpoint!(api, "/realm/emoji", get => emoji::get_realm_emoji);
    endpoint!(api, "/realm/emoji/{emoji_name}",
        post => emoji::upload_custom_emoji,
        delete => emoji::deactivate_custom_emoji);
    endpoint!(api, "/realm/presence", get => presence::get_presence);
    endpoint!(api, "/realm/profile_fields",
        get => profile_fields::get_profile_fields,
        post => profile_fields::create_profile_field,
        patch => profile_fields::reorder_profile_fields);
    endpoint!(api, "/realm/profile_fields/{field_id}",
        patch => profile_fields::update_profile_field,
        delete => profile_fields::delete_profile_field);
    endpoint!(api, "/users/me/profile_data",
        patch => profile_fields::update_own_profile_data,
        delete => profile_fields::delete_own_profile_data);
    endpoint!(api, "/channels/create", post => channels::create_channel);
    endpoint!(api, "/streams", get => channels::get_streams);
    endpoint!(api, "/streams/{stream_id}",
        get => channels::get_stream,
        patch => channels::update_stream,
        delete => channels::archive_stream);
    endpoint!(api, "/streams/{stream_id}/members", get => channels::get_members);
    endpoint!(api, "/streams/{stream_id}/delete_topic", post => channels::delete_topic);
    endpoint!(api, "/streams/{stream_id}/email_address",
        get => channels::get_email_address);
    endpoint!(api, "/get_stream_id", get => channels::get_stream_id);
    endpoint!(api, "/default_streams",
        get => channels::get_default_streams,
        post => channels::add_default_stream,
        delete => channels::remove_default_stream);
    endpoint!(api, "/default_stream_groups/create", post => channels::create_default_group);
    endpoint!(api, "/default_stream_groups/{group_id}",
        patch => channels::change_default_group,
        delete => channels::remove_default_group);
    endpoint!(api, "/default_stream_groups/{group_id}/streams",
        patch => channels::change_default_group_channels);
    endpoint!(api, "/users/me/{stream_id}/topics", get => channels::get_topics);
    endpoint!(api, "/users/me/subscriptions",
        get => subscriptions::get_subscriptions,
        post => subscriptions::subscribe,
        patch => subscriptions::update_subscriptions,
        delete => subscriptions::unsubscribe);
    endpoint!(api, "/users/me/subscriptions/properties",
        post => subscriptions::update_subscription_properties);
    endpoint!(api, "/users/me/subscriptions/muted_topics",
        patch => subscriptions::update_muted_topic);
    endpoint!(api, "/users/me/subscriptions/{stream_id}",
        patch => subscriptions::update_subscription);
    // After every /users/me/subscriptions/... route: actix matches in this order.
    endpoint!(api, "/users/{user_id}/subscriptions/{stream_id}",
        get => subscriptions::get_subscription_status);
    endpoint!(api, "/user_topics", post => subscriptions::update_user_topic);
    endpoint!(api, "/channel_folders",
        get => folders::get_channel_folders,
        patch => folders::reorder_channel_folders);
    endpoint!(api, "/channel_folders/create", post => folders::create_channel_folder);
    endpoint!(api, "/channel_folders/{channel_folder_id}",
        patch => folders::update_channel_folder);
    endpoint!(api, "/user_groups", get => user_groups::get_user_groups);
    endpoint!(api, "/user_groups/create", post => user_groups::create_user_group);
    endpoint!(api, "/user_groups/{user_group_id}", patch => user_groups::update_user_group);
    endpoint!(api, "/user_groups/{user_group_id}/deactivate",
        post => user_groups::deactivate_user_group);
    endpoint!(api, "/user_groups/{user_group_id}/members",
        get => user_groups::get_user_group_members,
        post => user_groups::update_user_group_members);
    endpoint!(api, "/user_groups/{user_group_id}/members/{user_id}",
        get => user_groups::get_is_user_group_member);
    endpoint!(api, "/user_groups/{user_group_id}/subgroups",
        get => user_groups::get_user_group_subgroups,
        post => user_groups::update_user_group_subgroups);
    endpoint!(api, "/messages/flags/narrow",
        post => messages::update_message_flags_for_narrow);
    endpoint!(api, "/messages/render", post => messages::render_message);
    endpoint!(api, "/messages/matches_narrow",
        get => messages::get_messages_matching_narrow);
    endpoint!(api, "/messages/{message_id}",
        get => messages::get_message,
        patch => messages::update_message,
        delete => messages::delete_message);
    endpoint!(api, "/messages/{message_id}/reactions",
        post => messages::add_reaction,
        delete => messages::remove_reaction);
    endpoint!(api, "/messages/{message_id}/history", get => messages::get_message_history);
    endpoint!(api, "/messages/{message_id}/read_receipts",
        get => messages::get_read_receipts);
    endpoint!(api, "/submessage", post => messages::add_submessage);
    endpoint!(api, "/scheduled_messages",
        get => scheduled::get_scheduled_messages,
        post => scheduled::create_scheduled_message);
    endpoint!(api, "/scheduled_messages/{scheduled_message_id}",
        patch => scheduled::update_scheduled_message,
        delete => scheduled::delete_scheduled_message);
    endpoint!(api, "/reminders",
        get => scheduled::get_reminders,
        post => scheduled::create_reminder);
    endpoint!(api, "/reminders/{reminder_id}", delete => scheduled::delete_reminder);
    endpoint!(api, "/messages/{message_id}/report", post => messages::report_message);
    endpoint!(api, "/navigation_views",
        get => devices::get_navigation_views,
        post => devices::add_navigation_view);
    endpoint!(api, "/navigation_views/{fragment:.*}",
        patch => devices::update_navigation_view,
        delete => devices::remove_navigation_view);
    endpoint!(api, "/drafts",
        get => drafts::get_drafts,
        post => drafts::create_drafts);
    endpoint!(api, "/drafts/{draft_id}",
        patch => drafts::edit_draft,
        delete => drafts::delete_draft);
    endpoint!(api, "/saved_snippets",
        get => drafts::get_saved_snippets,
        post => drafts::create_saved_snippet);
    endpoint!(api, "/saved_snippets/{saved_snippet_id}",
        patch => drafts::edit_saved_snippet,
        delete => drafts::delete_saved_snippet);
    endpoint!(api, "/register_client_device", post => devices::register_client_device);
    endpoint!(api, "/remove_client_device", post => devices::remove_client_device);
    endpoint!(api, "/mobile_push/register", post => devices::register_push);
    endpoint!(api, "/mobile_push/test_notification", post => devices::test_notification);
    endpoint!(api, "/mobile_push/e2ee/test_notification", post => devices::test_notification);
    endpoint!(api, "/users/me/apns_device_token",
        post => devices::legacy_push_token,
        delete => devices::legacy_push_token);
    endpoint!(api, "/users/me/android_gcm_reg_id",
        post => devices::legacy_push_token,
        delete => devices::legacy_push_token);
    endpoint!(api, "/mark_topic_as_read", post => messages::mark_topic_as_read);
    endpoint!(api, "/mark_stream_as_read", post => messages::mark_stream_as_read);
    endpoint!(api, "/mark_all_as_read", post => messages::mark_all_as_read);
    endpoint!(api, "/messages/{message_id}/typing", post => messages::set_edit_typing_status);
    endpoint!(api, "/user_uploads", post => uploads::upload_file);
    endpoint!(api, "/user_uploads/{realm_id}/{path:.*}", get => uploads::temporary_link);
    endpoint!(api, "/thumbnail/status/{realm_id}/{path:.*}", get => uploads::thumbnail_status);
    endpoint!(api, "/attachments", get => uploads::get_attachments);
    endpoint!(api, "/attachments/{attachment_id}", delete => uploads::delete_attachment);
    endpoint!(api, "/admin/projections", get => admin::get_projections);
    endpoint!(api, "/admin/events", get => admin::get_events);
    endpoint!(api, "/admin/inspections", get => admin::get_inspections);
    endpoint!(api, "/admin/backup", post => admin::take_backup);
    endpoint!(api, "/admin/ldap-sync", post => admin::ldap_sync);
    endpoint!(api, "/admin/sign-ins", get => admin::get_sign_ins);
    endpoint!(api, "/export/realm", get => exports::list, post => exports::start);
    endpoint!(api, "/export/realm/consents", get => exports::consents);
    endpoint!(api, "/export/realm/{export_id}", delete => exports::delete);
    endpoint!(api, "/admin/verify", get => admin::verify_log);
    endpoint!(api, "/admin/diff", get => admin::get_diff);
}

/// Builds the application with shared state, the house error format for everything, and a
/// guard that turns a panicking handler into a 500 instead of a dropped connection.
pub fn app(
    state: web::Data<AppState>,
) -> actix_web::App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = ServiceResponse<BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    actix_web::App::new()
        .app_data(state)
        .configure(configure)
        .default_service(web::to(not_found))
        .wrap_fn(|req, srv| {
            // In a cluster, writes go to the node holding the writer's lease.
            let state = req.app_data::<web::Data<AppState>>().cloned();
            let cluster = state.as_ref().and_then(|s| s.cluster.clone());
            let Some((state, cluster)) = state.zip(cluster) else {
                return Box::pin(srv.call(req))
                    as std::pin::Pin<Box<dyn std::future::Future<Output = _>>>;
            };
            if let Some(writer) = cluster.target(&req) {
                return Box::pin(
                    async move { Ok(forward::pass_on(req, writer, state, cluster).await) },
                );
            }
            let forwarded = cluster.is_forwarded(&req);
            let response = srv.call(req);
            Box::pin(async move {
                let res = response.await?;
                Ok(if forwarded {
                    forward::with_seq(res, state.engine.read(|s| s.seq.0))
                } else {
                    res
                })
            })
        })
        .wrap_fn(|req, srv| {
            let path = req.path().to_owned();
            // API requests whose credentials are valid count against their user; all others
            // (no credentials, or wrong ones: a header alone proves nothing) against their
            // address. Session requests (`/json/...`) count against their user in the `Auth`
            // extractor. One that another node of the cluster passed on was counted there.
            let state = req.app_data::<web::Data<AppState>>().cloned();
            let forwarded = state
                .as_ref()
                .and_then(|s| s.cluster.as_ref())
                .is_some_and(|c| c.is_forwarded(&req));
            // Login forms count against their address too, like API logins, and so do the
            // single sign-on addresses (each may make the server call the provider).
            let login_form = (req.method() == actix_web::http::Method::POST
                && (matches!(
                    path.as_str(),
                    "/login/" | "/login" | "/accounts/login/jwt/" | "/accounts/home/"
                ) || path.starts_with("/accounts/password/reset/")
                    || path.starts_with("/accounts/do_confirm/")))
                || path.starts_with("/accounts/login/social/")
                || path.starts_with("/accounts/login/subdomain/")
                || path.starts_with("/accounts/register/social/")
                || path.starts_with("/complete/");
            // Incoming webhooks are counted by their handler: against their bot once its key
            // is known, against the address when it is wrong (as Zulip counts them per bot).
            let webhook = path.starts_with("/api/v1/external/");
            let counted = match state {
                Some(state)
                    if !forwarded && !webhook && (path.starts_with("/api/v1/") || login_form) =>
                {
                    let caller = if login_form {
                        None
                    } else {
                        auth::authenticate(req.request()).ok()
                    };
                    let key = match &caller {
                        Some(auth) => Some(rate_limit::Key::User(auth.user_id.0)),
                        None => req.peer_addr().map(|a| rate_limit::Key::Ip(a.ip())),
                    };
                    let hit = key.map(|key| state.rate_limiter.hit(key)).transpose();
                    if let Some(auth) = caller {
                        actix_web::HttpMessage::extensions_mut(&req).insert(auth::Counted(auth));
                    }
                    hit.map(Option::flatten)
                }
                // An address already over its limit (by wrong keys) is refused before its
                // webhook body is read; its good requests count against their bot.
                Some(state) if !forwarded && webhook => match req.peer_addr() {
                    Some(peer) => state
                        .rate_limiter
                        .peek(rate_limit::Key::Ip(peer.ip()))
                        .map(|_| None),
                    None => Ok(None),
                },
                _ => Ok(None),
            };
            match counted {
                Ok(Some(standing)) => {
                    actix_web::HttpMessage::extensions_mut(&req).insert(standing);
                }
                Ok(None) => {}
                Err(refused) => {
                    let response = req.into_response(refused.error_response());
                    return Box::pin(async move { Ok(response) })
                        as std::pin::Pin<Box<dyn std::future::Future<Output = _>>>;
                }
            }
            let response = srv.call(req);
            Box::pin(async move {
                match AssertUnwindSafe(response).catch_unwind().await {
                    Ok(result) => result.map(|res| with_common_headers(res.map_into_boxed_body())),
                    Err(_) => {
                        tracing::error!(path = %loggable_path(&path), "a handler panicked");
                        // The dispatcher renders this error with `ApiError::error_response`.
                        Err(ApiError::internal("handler panicked").into())
                    }
                }
            })
        })
        .wrap_fn(|req, srv| {
            // Every request has an id: the client's `X-Request-Id` when it sent a sane one, else
            // a new one. Every log line written while it is answered carries it (the `request`
            // span), and so does the answer's `X-Request-Id`; `chronicle::access` logs one
            // line per answer at debug level.
            let id = request_id(req.headers().get("x-request-id"));
            let span = tracing::info_span!("request", request_id = %id);
            let (method, path) = (req.method().clone(), loggable_path(req.path()));
            let started = std::time::Instant::now();
            let response = {
                let _entered = span.enter();
                srv.call(req)
            };
            tracing::Instrument::instrument(
                async move {
                    let mut result = response.await;
                    let status = match &mut result {
                        Ok(res) => {
                            if let Ok(value) = HeaderValue::from_str(&id) {
                                res.headers_mut()
                                    .insert(header::HeaderName::from_static("x-request-id"), value);
                            }
                            res.status().as_u16()
                        }
                        Err(error) => error.as_response_error().status_code().as_u16(),
                    };
                    tracing::debug!(
                        target: "chronicle::access",
                        %method,
                        %path,
                        status,
                        ms = started.elapsed().as_secs_f64() * 1000.0,
                        "answered"
                    );
                    result
                },
                span,
            )
        })
        .wrap_fn(|req, srv| {
            // Every answer is counted by its route's pattern (never the raw path: ids and names
            // would make a series each), method and status, and timed.
            let scope = scope_of(req.path());
            let method = req.method().as_str().to_owned();
            let started = std::time::Instant::now();
            let response = srv.call(req);
            async move {
                let result = response.await;
                let route = result
                    .as_ref()
                    .ok()
                    .and_then(|res| {
                        let req = res.request();
                        match req.app_data::<Pattern>() {
                            Some(Pattern(pattern)) => Some(format!("{scope}{pattern}")),
                            None => req.match_pattern(),
                        }
                    })
                    .unwrap_or_else(|| "unmatched".to_owned());
                let status = match &result {
                    Ok(res) => res.status().as_u16(),
                    Err(error) => error.as_response_error().status_code().as_u16(),
                };
                let metrics = crate::metrics::get();
                metrics
                    .http_requests
                    .with_label_values(&[route.as_str(), method.as_str(), &status.to_string()])
                    .inc();
                metrics
                    .http_seconds
                    .with_label_values(&[route.as_str(), method.as_str()])
                    .observe(started.elapsed().as_secs_f64());
                result
            }
        })
}

/// A request's id: the client's (1 to 64 letters, digits, `.`, `_` or `-`), or a new random one.
fn request_id(given: Option<&HeaderValue>) -> String {
    let sane = given.and_then(|v| v.to_str().ok()).filter(|v| {
        !v.is_empty()
            && v.len() <= 64
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    });
    match sane {
        Some(id) => id.to_owned(),
        None => uuid::Uuid::new_v4().simple().to_string()[..16].to_owned(),
    }
}

/// Adds `X-Content-Type-Options: nosniff` to every answer (a browser must never guess that an
/// API answer is a page or a script), and `X-RateLimit-Limit`, `-Remaining` and `-Reset` to one
/// whose request was counted.
fn with_common_headers(mut res: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    use actix_web::HttpMessage;
    res.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let standing = res
        .request()
        .extensions()
        .get::<rate_limit::Standing>()
        .copied();
    if let Some(standing) = standing {
        let headers = res.headers_mut();
        let pairs: [(&'static str, String); 3] = [
            ("x-ratelimit-limit", standing.limit.to_string()),
            ("x-ratelimit-remaining", standing.remaining.to_string()),
            ("x-ratelimit-reset", standing.reset.to_string()),
        ];
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(
                    actix_web::http::header::HeaderName::from_static(name),
                    value,
                );
            }
        }
    }
    res
}

async fn not_found() -> HttpResponse {
    ApiError::not_found().error_response()
}

/// Zulip's 405 body: no `code`, the allowed methods listed.
fn method_not_allowed(allowed: &[&str]) -> HttpResponse {
    let methods: Vec<String> = allowed.iter().map(|m| m.to_ascii_uppercase()).collect();
    let mut response = HttpResponse::build(StatusCode::METHOD_NOT_ALLOWED);
    if let Ok(value) = HeaderValue::from_str(&methods.join(", ")) {
        response.insert_header((header::ALLOW, value));
    }
    response.json(serde_json::json!({
        "result": "error",
        "msg": "Method Not Allowed",
        "allowed_methods": methods,
    }))
}

/// Reads an integer path segment.
pub fn path_id(req: &actix_web::HttpRequest, name: &str) -> Result<u64, ApiError> {
    let raw = req.match_info().get(name).unwrap_or_default();
    raw.parse::<u64>().map_err(|_| ApiError::invalid(name, raw))
}

/// A request's path as the server's log may show it: the secret of the addresses whose path
/// carries one (a sign-up or reset link, an invitation, the desktop app's login token) is
/// replaced.
pub fn loggable_path(path: &str) -> String {
    const SECRET_AFTER: [&str; 6] = [
        "/accounts/confirm_new_email/",
        "/accounts/do_confirm/",
        "/accounts/login/subdomain/",
        "/accounts/password/reset/",
        "/accounts/unsubscribe/",
        "/join/",
    ];
    match SECRET_AFTER.iter().find(|p| path.starts_with(*p)) {
        Some(prefix) if path.len() > prefix.len() && !path.ends_with("/done/") => {
            format!("{prefix}[redacted]")
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod loggable_path_tests {
    #[test]
    fn secrets_in_paths_stay_out_of_the_log() {
        use super::loggable_path;
        assert_eq!(
            loggable_path("/accounts/do_confirm/eyJlbWFpbCI.abc"),
            "/accounts/do_confirm/[redacted]"
        );
        assert_eq!(
            loggable_path("/accounts/confirm_new_email/eyJ1c2VyX2lk.abc/"),
            "/accounts/confirm_new_email/[redacted]"
        );
        assert_eq!(
            loggable_path("/accounts/password/reset/2/1764-abcdef/"),
            "/accounts/password/reset/[redacted]"
        );
        assert_eq!(
            loggable_path("/accounts/unsubscribe/login/4-abcDEF"),
            "/accounts/unsubscribe/[redacted]"
        );
        assert_eq!(
            loggable_path("/accounts/password/reset/done/"),
            "/accounts/password/reset/done/"
        );
        assert_eq!(loggable_path("/api/v1/messages"), "/api/v1/messages");
    }
}
