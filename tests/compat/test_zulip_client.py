"""The official `zulip` Python client (0.9.1), unchanged, against Chronicle."""

import struct
import zlib

import requests
import zulip


def owner_client(server):
    return zulip.Client(config_file=str(server.zuliprc))


def listen_in_thread(client, on_event, event_types):
    """Runs `client.call_on_each_event` in a thread and returns once its queue is registered
    (its `register` has returned), so that what the test does next is heard."""
    import threading

    registered = threading.Event()
    register = client.register

    def register_and_tell(*args, **kwargs):
        answer = register(*args, **kwargs)
        registered.set()
        return answer

    client.register = register_and_tell

    def listen():
        try:
            client.call_on_each_event(on_event, event_types=event_types)
        except SystemExit:  # on_event's way out of the loop
            pass

    threading.Thread(target=listen, daemon=True).start()
    assert registered.wait(30), "call_on_each_event did not register a queue"


def test_client_is_built_from_the_written_zuliprc(server):
    client = owner_client(server)
    # Client() already called GET /server_settings; the feature level steers its behaviour.
    settings = client.get_server_settings()
    assert settings["result"] == "success"
    assert settings["realm_url"] == server.url
    assert isinstance(settings["zulip_feature_level"], int)
    profile = client.get_profile()
    assert profile["result"] == "success"
    assert profile["user_id"] == 1
    assert profile["role"] == 100
    assert profile["email"] == client.email


def test_user_lifecycle_through_the_client(server):
    owner = owner_client(server)
    created = owner.create_user(
        {"email": "compat@example.com", "password": "compat-password", "full_name": "Compat"}
    )
    assert created["result"] == "success", created
    user_id = created["user_id"]

    fetched = requests.post(
        f"{server.url}/api/v1/fetch_api_key",
        data={"username": "compat@example.com", "password": "compat-password"},
        timeout=15,
    ).json()
    assert fetched["result"] == "success"
    member = zulip.Client(email="compat@example.com", api_key=fetched["api_key"], site=server.url)
    assert member.get_profile()["user_id"] == user_id

    # A member is refused on administrator endpoints, in Zulip's shape.
    refused = member.create_user({"email": "x@example.com", "password": "xxxxxxxx", "full_name": "X"})
    assert refused["result"] == "error"
    assert refused["code"] == "UNAUTHORIZED_PRINCIPAL"

    assert owner.deactivate_user_by_id(user_id)["result"] == "success"
    denied = member.get_profile()
    assert denied["result"] == "error"
    assert denied["code"] == "UNAUTHORIZED"
    assert owner.reactivate_user_by_id(user_id)["result"] == "success"
    assert member.get_profile()["result"] == "success"


def test_regenerated_key_replaces_the_old_one(server):
    fetched = requests.post(
        f"{server.url}/api/v1/fetch_api_key",
        data={"username": "compat@example.com", "password": "compat-password"},
        timeout=15,
    ).json()
    old = zulip.Client(email="compat@example.com", api_key=fetched["api_key"], site=server.url)
    answer = old.call_endpoint(url="users/me/api_key/regenerate", method="POST")
    assert answer["result"] == "success"
    assert old.get_profile()["code"] == "UNAUTHORIZED"
    new = zulip.Client(email="compat@example.com", api_key=answer["api_key"], site=server.url)
    assert new.get_profile()["result"] == "success"


def test_unknown_parameters_are_reported(server):
    client = owner_client(server)
    answer = client.call_endpoint(url="users/me", method="GET", request={"not_a_parameter": 1})
    assert answer["result"] == "success"
    assert answer["ignored_parameters_unsupported"] == ["not_a_parameter"]


def test_channels_subscriptions_and_topics_through_the_client(server):
    client = owner_client(server)
    added = client.add_subscriptions(streams=[{"name": "compat", "description": "From the client"}])
    assert added["result"] == "success", added
    assert added["subscribed"] == {"1": ["compat"]}
    subs = client.get_subscriptions()
    names = [s["name"] for s in subs["subscriptions"]]
    assert "compat" in names
    stream_id = client.get_stream_id("compat")["stream_id"]
    streams = client.get_streams()["streams"]
    assert any(s["stream_id"] == stream_id for s in streams)

    settings = client.update_subscription_settings(
        [{"stream_id": stream_id, "property": "pin_to_top", "value": True}]
    )
    assert settings["result"] == "success", settings
    pinned = [s for s in client.get_subscriptions()["subscriptions"] if s["stream_id"] == stream_id]
    assert pinned[0]["pin_to_top"] is True

    muted = client.mute_topic({"op": "add", "stream_id": stream_id, "topic": "lunch"})
    assert muted["result"] == "success", muted
    policy = client.call_endpoint(
        url="user_topics",
        method="POST",
        request={"stream_id": stream_id, "topic": "lunch", "visibility_policy": 3},
    )
    assert policy["result"] == "success", policy

    created = client.call_endpoint(
        url="channels/create", method="POST", request={"name": "compat-2", "subscribers": [1]}
    )
    assert created["result"] == "success", created
    again = client.call_endpoint(
        url="channels/create", method="POST", request={"name": "compat-2", "subscribers": [1]}
    )
    assert again["code"] == "CHANNEL_ALREADY_EXISTS"

    removed = client.remove_subscriptions(["compat"])
    assert removed["removed"] == ["compat"]


def test_user_groups_through_the_client(server):
    client = owner_client(server)
    groups = client.get_user_groups()
    assert groups["result"] == "success"
    assert {"role:owners", "role:members", "role:nobody"} <= {g["name"] for g in groups["user_groups"]}
    created = client.create_user_group({"name": "compat-group", "description": "d", "members": [1]})
    assert created["result"] == "success", created


def test_call_on_each_event_sees_a_committed_change(server):
    import threading

    client = owner_client(server)
    seen = []
    done = threading.Event()

    def on_event(event):
        seen.append(event)
        if event["type"] == "channel_folder":
            done.set()
            raise SystemExit  # leaves call_on_each_event's loop

    listen_in_thread(client, on_event, ["channel_folder"])
    made = owner_client(server).call_endpoint(
        url="channel_folders/create", method="POST", request={"name": "Live", "description": ""}
    )
    assert made["result"] == "success", made
    assert done.wait(20), seen
    assert seen[-1]["op"] == "add"
    assert seen[-1]["channel_folder"]["name"] == "Live"


def test_messages_through_the_client(server):
    """Sending, fetching with narrows, editing, reacting, flagging and deleting."""
    client = owner_client(server)
    assert client.add_subscriptions(streams=[{"name": "compat-messages"}])["result"] == "success"
    sent = client.send_message(
        {"type": "stream", "to": "compat-messages", "topic": "plans", "content": "Hello :tada:"}
    )
    assert sent["result"] == "success", sent
    message_id = sent["id"]

    # Both narrow forms: legacy pairs (zulip-term) and operator objects.
    for narrow in (
        [["stream", "compat-messages"], ["topic", "plans"]],
        [{"operator": "channel", "operand": "compat-messages"}, {"operator": "topic", "operand": "plans"}],
    ):
        fetched = client.get_messages(
            {"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": narrow}
        )
        assert fetched["result"] == "success", fetched
        assert [m["id"] for m in fetched["messages"]] == [message_id]
    assert 'class="emoji emoji-1f389"' in fetched["messages"][0]["content"]

    edited = client.update_message({"message_id": message_id, "content": "Hello, edited"})
    assert edited["result"] == "success", edited
    moved = client.update_message(
        {"message_id": message_id, "topic": "later", "propagate_mode": "change_all"}
    )
    assert moved["result"] == "success", moved
    assert client.get_raw_message(message_id)["raw_content"] == "Hello, edited"
    history = client.get_message_history(message_id)["message_history"]
    assert [h["topic"] for h in history] == ["plans", "plans", "later"]
    assert history[1]["prev_content"] == "Hello :tada:"

    assert client.add_reaction({"message_id": message_id, "emoji_name": "octopus"})["result"] == "success"
    again = client.add_reaction({"message_id": message_id, "emoji_name": "octopus"})
    assert again["code"] == "REACTION_ALREADY_EXISTS"
    message = client.get_messages(
        {"anchor": message_id, "num_before": 0, "num_after": 0, "narrow": []}
    )["messages"][0]
    assert [(r["emoji_name"], r["emoji_code"]) for r in message["reactions"]] == [("octopus", "1f419")]
    assert client.remove_reaction({"message_id": message_id, "emoji_name": "octopus"})["result"] == "success"

    starred = client.update_message_flags({"messages": [message_id], "op": "add", "flag": "starred"})
    assert starred["result"] == "success", starred
    assert client.get_messages(
        {"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": [["is", "starred"]]}
    )["messages"][0]["id"] == message_id
    stream_id = client.get_stream_id("compat-messages")["stream_id"]
    assert client.mark_stream_as_read(stream_id)["result"] == "success"
    assert client.mark_all_as_read()["result"] == "success"

    assert client.delete_message(message_id)["result"] == "success"
    gone = client.get_raw_message(message_id)
    assert gone["result"] == "error" and gone["msg"] == "Invalid message(s)"


def test_users_bots_settings_and_profile_fields_through_the_client(server):
    owner = owner_client(server)
    members = owner.get_members()
    assert members["result"] == "success", members
    emails = [m["email"] for m in members["members"]]
    assert owner.email in emails
    me = owner.get_profile()
    assert owner.get_user_by_id(me["user_id"])["user"]["email"] == owner.email
    compat = next(m for m in members["members"] if m["email"] == "compat@example.com")
    renamed = owner.update_user_by_id(compat["user_id"], full_name="Compat Renamed")
    assert renamed["result"] == "success", renamed
    assert owner.get_user_by_id(compat["user_id"])["user"]["full_name"] == "Compat Renamed"
    invited = owner.call_endpoint(
        url="invites", method="POST", request={"invitee_emails": "invitee@example.com", "stream_ids": []}
    )
    assert invited["result"] == "success", invited
    listed_invites = owner.call_endpoint(url="invites", method="GET")["invites"]
    assert [i["email"] for i in listed_invites] == ["invitee@example.com"]
    assert owner.call_endpoint(url=f"users/{owner.email}", method="GET")["user"]["user_id"] == me["user_id"]

    # A bot, through the endpoint the web app uses; it works as a client of its own.
    bot = owner.call_endpoint(
        url="bots", method="POST", request={"full_name": "Compat Bot", "short_name": "compat"}
    )
    assert bot["result"] == "success", bot
    host = server.url.split("://", 1)[1].split(":", 1)[0]
    domain = host if any(c.isalpha() for c in host) else "chronicle.invalid"
    as_bot = zulip.Client(email=f"compat-bot@{domain}", api_key=bot["api_key"], site=server.url)
    assert as_bot.get_profile()["is_bot"] is True
    assert owner.add_subscriptions(streams=[{"name": "compat-status"}])["result"] == "success"
    channel = owner.get_stream_id("compat-status")["stream_id"]
    status = owner.get_subscription_status(user_id=me["user_id"], stream_id=channel)
    assert status == {"result": "success", "msg": "", "is_subscribed": True}, status
    listed = owner.call_endpoint(url="bots", method="GET")
    assert [b["username"] for b in listed["bots"]] == [f"compat-bot@{domain}"]

    # Organization settings.
    changed = owner.call_endpoint(
        url="realm", method="PATCH", request={"message_content_edit_limit_seconds": 1200}
    )
    assert changed["message_content_edit_limit_seconds"] == 1200, changed
    state = owner.register(fetch_event_types=["realm"])
    assert state["realm_message_content_edit_limit_seconds"] == 1200

    # Custom profile fields: define, fill in, read back.
    created = owner.create_realm_profile_field(name="Team", hint="Which team", field_type=1)
    assert created["result"] == "success", created
    field_id = created["id"]
    fields = owner.get_realm_profile_fields()["custom_fields"]
    assert [f["name"] for f in fields] == ["Team"]
    assert owner.update_realm_profile_field(field_id=field_id, hint="Your team")["result"] == "success"
    update = owner.call_endpoint(
        url="users/me/profile_data", method="PATCH", request={"data": [{"id": field_id, "value": "Core"}]}
    )
    assert update["result"] == "success", update
    profile = owner.get_user_by_id(me["user_id"], include_custom_profile_fields="true")
    assert profile["user"]["profile_data"][str(field_id)]["value"] == "Core"
    assert owner.reorder_realm_profile_fields(order=[field_id])["result"] == "success"
    assert owner.remove_realm_profile_field(field_id=field_id)["result"] == "success"
    assert owner.get_realm_profile_fields()["custom_fields"] == []


def test_linkifiers_through_the_client(server):
    owner = owner_client(server)
    added = owner.add_realm_filter("#(?P<id>[0-9]+)", "https://issues.example/{id}")
    assert added["result"] == "success", added
    listed = owner.get_realm_linkifiers()["linkifiers"]
    assert [(l["id"], l["url_template"]) for l in listed] == [(added["id"], "https://issues.example/{id}")]
    sent = owner.send_message({"type": "stream", "to": "compat-status", "topic": "links", "content": "see #42"})
    assert sent["result"] == "success", sent
    message = owner.get_raw_message(sent["id"])["message"]
    assert '<a href="https://issues.example/42">#42</a>' in message["content"]
    assert owner.remove_realm_filter(added["id"])["result"] == "success"
    assert owner.get_realm_linkifiers()["linkifiers"] == []


def test_channel_administration_and_groups_through_the_client(server):
    owner = owner_client(server)
    assert owner.add_subscriptions(streams=[{"name": "compat-admin"}])["result"] == "success"
    stream_id = owner.get_stream_id("compat-admin")["stream_id"]

    updated = owner.update_stream({"stream_id": stream_id, "description": "Managed by the client"})
    assert updated["result"] == "success", updated
    stream = owner.call_endpoint(url=f"streams/{stream_id}", method="GET")["stream"]
    assert stream["description"] == "Managed by the client"

    members = owner.get_subscribers(stream="compat-admin")
    assert members["result"] == "success", members
    assert members["subscribers"] == [owner.get_profile()["user_id"]]

    sent = owner.send_message({"type": "stream", "to": "compat-admin", "topic": "agenda", "content": "hi"})
    assert sent["result"] == "success", sent
    topics = owner.get_stream_topics(stream_id)
    assert [t["name"] for t in topics["topics"]] == ["agenda"]

    assert owner.add_default_stream(stream_id)["result"] == "success"
    defaults = owner.call_endpoint(url="default_streams", method="GET")["default_streams"]
    assert [d["stream_id"] for d in defaults] == [stream_id]

    group = owner.create_user_group({"name": "compat-admins", "description": "d", "members": []})
    assert group["result"] == "success", group
    group_id = group["group_id"]
    me = owner.get_profile()["user_id"]
    assert owner.update_user_group_members(group_id, {"add": [me]})["result"] == "success"
    renamed = owner.update_user_group({"group_id": group_id, "name": "compat-admins-2"})
    assert renamed["result"] == "success", renamed
    names = {g["name"]: g for g in owner.get_user_groups()["user_groups"]}
    assert names["compat-admins-2"]["members"] == [me]

    assert owner.call_endpoint(url="default_streams", method="DELETE", request={"stream_id": stream_id})["result"] == "success"
    archived = owner.delete_stream(stream_id)
    assert archived["result"] == "success", archived
    listed = owner.get_streams()["streams"]
    assert all(s["stream_id"] != stream_id for s in listed)


def test_live_events_for_messages_reactions_and_typing(server):
    """`call_on_each_event` hears another user's message, reaction and typing as they happen."""
    import threading

    owner = owner_client(server)
    created = owner.create_user(
        {"email": "live@example.com", "password": "live-password", "full_name": "Live Peer"}
    )
    assert created["result"] == "success", created
    peer_key = requests.post(
        f"{server.url}/api/v1/fetch_api_key",
        data={"username": "live@example.com", "password": "live-password"},
        timeout=15,
    ).json()["api_key"]
    peer = zulip.Client(email="live@example.com", api_key=peer_key, site=server.url)
    seen = []
    done = threading.Event()

    def on_event(event):
        seen.append(event)
        if event["type"] == "typing":
            done.set()
            raise SystemExit

    listen_in_thread(owner_client(server), on_event, ["message", "reaction", "typing"])
    sent = peer.send_message({"type": "private", "to": [1], "content": "ping"})
    assert sent["result"] == "success", sent
    reacted = peer.add_reaction({"message_id": sent["id"], "emoji_name": "wave"})
    assert reacted["result"] == "success", reacted
    typing = peer.set_typing_status({"op": "start", "to": [1]})
    assert typing["result"] == "success", typing
    assert done.wait(20), seen
    assert [e["type"] for e in seen] == ["message", "reaction", "typing"], seen
    # The client registers without apply_markdown: the Markdown source comes back.
    assert seen[0]["message"]["content"] == "ping"
    assert seen[1]["op"] == "add" and seen[1]["emoji_name"] == "wave"
    assert seen[2]["op"] == "start" and seen[2]["sender"]["email"] == "live@example.com"


def tiny_png():
    """A real 2 x 2 PNG (the server decodes what it is sent)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff\x80\x00\xff" * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_custom_emoji_and_presence_through_the_client(server, tmp_path):
    client = owner_client(server)
    assert client.add_subscriptions(streams=[{"name": "compat-emoji"}])["result"] == "success"
    image = tmp_path / "parrot.png"
    image.write_bytes(tiny_png())
    with open(image, "rb") as fp:
        uploaded = client.call_endpoint("realm/emoji/compat_parrot", method="POST", files=[fp])
    assert uploaded["result"] == "success", uploaded
    listed = client.call_endpoint("realm/emoji", method="GET")
    (emoji,) = [e for e in listed["emoji"].values() if e["name"] == "compat_parrot"]
    served = requests.get(server.url + emoji["source_url"], timeout=15)
    assert served.status_code == 200 and served.content == image.read_bytes()
    sent = client.send_message(
        {"type": "stream", "to": "compat-emoji", "topic": "emoji", "content": "look :compat_parrot:"}
    )
    assert sent["result"] == "success", sent
    reacted = client.add_reaction({"message_id": sent["id"], "emoji_name": "compat_parrot"})
    assert reacted["result"] == "success", reacted
    raw = client.get_raw_message(sent["id"])["message"]
    assert raw["reactions"][0]["reaction_type"] == "realm_emoji"
    assert raw["reactions"][0]["emoji_code"] == emoji["id"]

    presence = client.update_presence({"status": "active", "ping_only": False, "new_user_input": True})
    assert presence["result"] == "success", presence
    assert presence["presences"][client.email]["aggregated"]["status"] == "active"
    mine = client.call_endpoint(f"users/{client.email}/presence", method="GET")
    assert mine["presence"]["aggregated"]["status"] == "active", mine
    everyone = client.call_endpoint("realm/presence", method="GET")
    assert client.email in everyone["presences"]


def test_status_and_read_receipts_through_the_client(server):
    client = owner_client(server)
    # Profile › Set status, as the mobile app and the Python client send it.
    done = client.call_endpoint(
        "users/me/status", method="POST", request={"status_text": "Busy", "emoji_name": "calendar"}
    )
    assert done["result"] == "success", done
    me = client.get_profile()["user_id"]
    shown = client.call_endpoint(f"users/{me}/status", method="GET")
    assert shown["status"] == {
        "status_text": "Busy",
        "emoji_name": "calendar",
        "emoji_code": "1f4c5",
        "reaction_type": "unicode_emoji",
    }, shown
    state = client.register(fetch_event_types=["user_status", "realm"])
    assert state["user_status"][str(me)]["status_text"] == "Busy"
    assert state["realm_enable_read_receipts"] is True
    # The sender is never among a message's readers.
    assert client.add_subscriptions(streams=[{"name": "compat-receipts"}])["result"] == "success"
    sent = client.send_message(
        {"type": "stream", "to": "compat-receipts", "topic": "r", "content": "read me"}
    )
    receipts = client.call_endpoint(f"messages/{sent['id']}/read_receipts", method="GET")
    assert receipts == {"result": "success", "msg": "", "user_ids": []}, receipts
    cleared = client.call_endpoint(
        "users/me/status", method="POST", request={"status_text": "", "emoji_name": ""}
    )
    assert cleared["result"] == "success", cleared
    assert client.call_endpoint(f"users/{me}/status", method="GET")["status"] == {}


def test_bot_state_through_zulip_bots(server):
    """The official bots package's StateHandler (what the incrementor, chess and trivia bots keep
    their state in) over /bot_storage, across two handlers as across bot restarts."""
    from zulip_bots.lib import StateHandler

    client = owner_client(server)
    created = client.call_endpoint(
        "bots",
        method="POST",
        request={"full_name": "Counter", "short_name": "counter-compat", "bot_type": 1},
    )
    assert created["result"] == "success", created
    email = client.get_user_by_id(created["user_id"])["user"]["email"]
    bot = zulip.Client(email=email, api_key=created["api_key"], site=server.url)
    handler = StateHandler(bot)
    handler.put("number", 1)
    handler.put("board", {"cells": [0, 1, 2], "turn": "white"})
    handler.put("number", handler.get("number") + 1)
    restarted = StateHandler(bot)
    assert restarted.get("number") == 2
    assert restarted.get("board") == {"cells": [0, 1, 2], "turn": "white"}
    try:
        restarted.get("missing")
        raise AssertionError("a missing key must not be found")
    except KeyError:
        pass
    # The raw endpoints: all entries, then removal; another user's storage is separate.
    assert bot.get_storage()["storage"] == {"number": "2", "board": restarted.state_["board"]}
    assert client.get_storage()["storage"] == {}
    removed = bot.call_endpoint("bot_storage", method="DELETE", request={"keys": ["number"]})
    assert removed["result"] == "success", removed
    assert bot.get_storage({"keys": ["number"]})["msg"] == "Key does not exist."


def test_file_uploads_through_the_client(server, tmp_path):
    client = owner_client(server)
    path = tmp_path / "minutes.txt"
    path.write_text("the minutes")
    with open(path, "rb") as fp:
        uploaded = client.upload_file(fp)
    assert uploaded["result"] == "success", uploaded
    assert uploaded["filename"] == "minutes.txt" and uploaded["url"] == uploaded["uri"]
    assert client.add_subscriptions(streams=[{"name": "compat-files"}])["result"] == "success"
    sent = client.send_message(
        {"type": "stream", "to": "compat-files", "topic": "f", "content": f"[minutes]({uploaded['url']})"}
    )
    assert sent["result"] == "success", sent
    listed = client.get_attachments()
    (mine,) = [a for a in listed["attachments"] if a["name"] == "minutes.txt"]
    assert [m["id"] for m in mine["messages"]] == [sent["id"]]
    assert listed["upload_space_used"] >= len("the minutes")
    # Downloads take the API key, as the mobile app sends it.
    served = requests.get(server.url + uploaded["url"], auth=(client.email, client.api_key), timeout=15)
    assert served.status_code == 200 and served.text == "the minutes"
    deleted = client.call_endpoint(f"attachments/{mine['id']}", method="DELETE")
    assert deleted["result"] == "success", deleted


def test_alert_words_through_the_client(server):
    client = owner_client(server)
    added = client.add_alert_words(["compat-alarm", "Pager"])
    assert added["result"] == "success", added
    assert added["alert_words"][-2:] == ["compat-alarm", "Pager"], added
    assert "pager" not in client.add_alert_words(["pager"])["alert_words"]
    removed = client.remove_alert_words(["PAGER"])
    assert removed["result"] == "success" and "Pager" not in removed["alert_words"], removed
    assert "compat-alarm" in client.get_alert_words()["alert_words"]


def test_muted_users_through_the_client(server):
    client = owner_client(server)
    created = client.create_user(
        {"email": "compat-muted@example.com", "password": "compat-pass-1", "full_name": "Compat Muted"}
    )
    assert created["result"] == "success", created
    other = created["user_id"]
    muted = client.call_endpoint(f"users/me/muted_users/{other}", method="POST")
    assert muted["result"] == "success", muted
    state = client.register(fetch_event_types=["muted_users"])
    assert [m["id"] for m in state["muted_users"]] == [other], state
    again = client.call_endpoint(f"users/me/muted_users/{other}", method="POST")
    assert again["msg"] == "User already muted", again
    unmuted = client.call_endpoint(f"users/me/muted_users/{other}", method="DELETE")
    assert unmuted["result"] == "success", unmuted
    assert client.register(fetch_event_types=["muted_users"])["muted_users"] == []


def test_scheduled_messages_and_reminders_through_the_client(server):
    import time

    client = owner_client(server)
    assert client.add_subscriptions(streams=[{"name": "compat-later"}])["result"] == "success"
    stream_id = client.get_stream_id("compat-later")["stream_id"]
    # An hour ahead while it is listed; the edit then moves it to two seconds ahead (a time
    # close from the start could come before a loaded machine had listed and edited it).
    at = int(time.time()) + 3600
    created = client.call_endpoint(
        "scheduled_messages",
        method="POST",
        request={
            "type": "stream",
            "to": stream_id,
            "topic": "later",
            "content": "sent by the delivery job",
            "scheduled_delivery_timestamp": at,
        },
    )
    assert created["result"] == "success", created
    listed = client.call_endpoint("scheduled_messages", method="GET")
    (mine,) = [m for m in listed["scheduled_messages"] if m["scheduled_message_id"] == created["scheduled_message_id"]]
    assert mine["to"] == stream_id and mine["topic"] == "later" and mine["failed"] is False
    # Edited through PATCH, then sent at its time.
    edited = client.call_endpoint(
        f"scheduled_messages/{created['scheduled_message_id']}",
        method="PATCH",
        request={"content": "sent by the delivery job, edited",
                 "scheduled_delivery_timestamp": int(time.time()) + 2},
    )
    assert edited["result"] == "success", edited
    deadline = time.time() + 25
    while time.time() < deadline:
        found = client.get_messages(
            {"anchor": "newest", "num_before": 1, "num_after": 0,
             "narrow": [{"operator": "channel", "operand": "compat-later"}]}
        )["messages"]
        if found and found[0]["content"] == "<p>sent by the delivery job, edited</p>":
            break
        time.sleep(0.3)
    else:
        raise AssertionError("the scheduled message was not sent")
    assert client.call_endpoint("scheduled_messages", method="GET")["scheduled_messages"] == []
    # A reminder about it, then deleted before its time.
    reminder = client.call_endpoint(
        "reminders",
        method="POST",
        request={"message_id": found[0]["id"], "scheduled_delivery_timestamp": int(time.time()) + 3600},
    )
    assert reminder["result"] == "success", reminder
    (listed,) = client.call_endpoint("reminders", method="GET")["reminders"]
    assert listed["reminder_target_message_id"] == found[0]["id"]
    deleted = client.call_endpoint(f"reminders/{reminder['reminder_id']}", method="DELETE")
    assert deleted["result"] == "success", deleted
    assert client.call_endpoint("reminders", method="GET")["reminders"] == []


def test_an_incoming_webhook_posts_through_a_bot(server):
    client = owner_client(server)
    created = client.call_endpoint(
        "bots",
        method="POST",
        request={"full_name": "Compat Hooks", "short_name": "compat-hooks", "bot_type": 2},
    )
    assert created["result"] == "success", created
    assert client.add_subscriptions(streams=[{"name": "compat-alerts"}])["result"] == "success"
    alert = {
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "DiskFull", "instance": "db-1"},
                "annotations": {"description": "Disk is 97% full"},
                "generatorURL": "http://prometheus.example.test/graph?g0.tab=1",
            }
        ]
    }
    answer = requests.post(
        server.url + "/api/v1/external/alertmanager",
        params={"api_key": created["api_key"], "stream": "compat-alerts", "desc": "description"},
        json=alert,
        timeout=15,
    )
    assert answer.json() == {"result": "success", "msg": ""}, answer.text
    (message,) = client.get_messages(
        {"anchor": "newest", "num_before": 1, "num_after": 0,
         "narrow": [{"operator": "channel", "operand": "compat-alerts"}]}
    )["messages"]
    assert message["subject"] == "db-1"
    assert message["sender_id"] == created["user_id"]
    assert "Disk is 97% full" in message["content"]
