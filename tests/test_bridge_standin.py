"""The stand-in Bridge, driven by the real `anthropic` client and the real Claude Agent SDK.

Real sockets throughout: every fault is observed the way the daemon will observe it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import anthropic
import pytest

from tests.conftest import run_async, sdk_env
from wsd.daemon.standin.bridge import (
    JSON,
    BridgeStandin,
    ConversationScript,
    Fault,
    Reply,
    estimate_tokens,
)

TOKEN = "test-sprite-token"
MODEL = "claude-haiku-4-5"
HELLO: Any = [{"role": "user", "content": "hello"}]
T = TypeVar("T")


@pytest.fixture
def standin() -> Iterator[BridgeStandin]:
    """A started stand-in on an ephemeral port, stopped after the test."""
    with BridgeStandin() as server:
        yield server


@pytest.fixture
def client(standin: BridgeStandin) -> Iterator[anthropic.Anthropic]:
    """The real SDK client as the daemon configures it: no SDK retries, explicit timeout."""
    with anthropic.Anthropic(
        base_url=standin.url, api_key=TOKEN, max_retries=0, timeout=5.0
    ) as sdk_client:
        yield sdk_client


def ask(client: anthropic.Anthropic, text: str = "hello") -> anthropic.types.Message:
    """One non-streaming call."""
    messages: Any = [{"role": "user", "content": text}]
    return client.messages.create(model=MODEL, max_tokens=100, messages=messages)


def text_of(message: anthropic.types.Message) -> str:
    """Concatenated text blocks of a reply."""
    return "".join(b.text for b in message.content if b.type == "text")


def http(url: str, method: str = "GET", body: JSON | None = None) -> tuple[int, bytes]:
    """A plain urllib request returning (status, body), errors included."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


# -- replies ---------------------------------------------------------------------------------


def test_default_reply_is_none_in_messages_shape(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Unscripted requests get the default "NONE" reply with every Messages API field."""
    message = ask(client)
    assert text_of(message) == "NONE"
    assert message.id.startswith("msg_")
    assert (message.type, message.role, message.model) == ("message", "assistant", MODEL)
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)
    status, raw = http(standin.url + "/v1/messages", "POST", {"model": "m", "messages": HELLO})
    assert status == 200
    assert set(json.loads(raw)) == {
        "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"
    }  # fmt: skip


def test_usage_is_estimated_from_request_size_unless_scripted(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """input_tokens is chars/4 of the request body; scripted usage overrides the estimate."""
    usage = ask(client, "x" * 4000).usage
    body = standin.requests[-1].body
    assert usage.input_tokens == estimate_tokens(body.decode()) >= 1000
    assert usage.output_tokens >= 1
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    standin.script(Reply.text("hi", usage={"input_tokens": 7, "cache_read_input_tokens": 900}))
    usage = ask(client).usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (7, 900)


def test_steps_are_consumed_in_order_then_responder_answers(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Scripted steps are served FIFO, one per request; then the responder sees the body."""
    seen: list[JSON] = []

    def responder(body: JSON) -> Reply:
        seen.append(body)
        return Reply.text(f"echo {body['messages'][0]['content']}")

    standin.responder = responder
    standin.script(Reply.text("first"), Reply.text("second"))
    assert standin.pending_steps == 2
    assert [text_of(ask(client, q)) for q in ("a", "b", "c")] == ["first", "second", "echo c"]
    assert standin.pending_steps == 0
    assert [b["messages"] for b in seen] == [[{"role": "user", "content": "c"}]]


def test_query_string_and_count_tokens(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """/v1/messages?beta=true is served like /v1/messages; count_tokens returns input_tokens."""
    standin.script(Reply.text("beta ok"))
    body = {"model": MODEL, "max_tokens": 10, "messages": HELLO}
    status, raw = http(standin.url + "/v1/messages?beta=true", "POST", body)
    assert (status, json.loads(raw)["content"]) == (200, [{"type": "text", "text": "beta ok"}])
    assert standin.requests[-1].request_line.startswith("POST /v1/messages?beta=true ")
    assert standin.requests[-1].path == "/v1/messages"
    counted = client.messages.count_tokens(model=MODEL, messages=HELLO)
    assert counted.input_tokens == estimate_tokens(standin.requests[-1].body.decode())
    assert standin.pending_steps == 0  # count_tokens never consumes a step


def test_unknown_paths_get_anthropic_404_and_probes_get_200(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Unknown endpoints raise NotFoundError (not_found_error); GET/HEAD / answer 200."""
    with pytest.raises(anthropic.NotFoundError) as err:
        client.models.retrieve("claude-haiku-4-5")
    assert err.value.type == "not_found_error"
    assert http(standin.url + "/")[0] == 200
    assert http(standin.url + "/", "HEAD")[0] == 200
    assert http(standin.url + "/api/hello", "HEAD")[0] == 200  # the Claude CLI's probe
    assert http(standin.url + "/v1/messages")[0] == 404  # GET is not an endpoint


def test_non_json_body_is_a_400(standin: BridgeStandin) -> None:
    """A request body that is not a JSON object gets invalid_request_error."""
    req = urllib.request.Request(standin.url + "/v1/messages", data=b"{nope", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 400
    assert json.loads(err.value.read())["error"]["type"] == "invalid_request_error"


def test_empty_truncated_and_tool_use_replies(
    client: anthropic.Anthropic, standin: BridgeStandin
) -> None:
    """content: [] parses as an empty list; truncation and tool calls set their stop_reason."""
    standin.script(
        Reply.empty(),
        Reply.truncated("FACT: the user prefers"),
        Reply.tool_use("search", {"q": "x"}, text="Let me look."),
    )
    empty = ask(client)
    assert (empty.content, empty.stop_reason) == ([], "end_turn")
    cut = ask(client)
    assert (text_of(cut), cut.stop_reason) == ("FACT: the user prefers", "max_tokens")
    tool = ask(client)
    assert tool.stop_reason == "tool_use"
    assert [b.type for b in tool.content] == ["text", "tool_use"]
    block = tool.content[1]
    assert block.type == "tool_use"
    assert (block.name, block.input, block.id[:6]) == ("search", {"q": "x"}, "toolu_")


def test_latency_delays_every_reply(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """The global latency is slept before the reply is sent."""
    standin.latency = 0.3
    started = time.monotonic()
    ask(client)
    assert time.monotonic() - started >= 0.3


def test_broken_responder_becomes_a_500(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """A responder that raises answers 500 naming the error instead of hanging the client."""

    def responder(body: JSON) -> Reply:
        raise KeyError("no rule")

    standin.responder = responder
    with pytest.raises(anthropic.InternalServerError, match="responder failed"):
        ask(client)


# -- faults ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "exc_type", "error_type"),
    [
        (Fault.server_error(), anthropic.InternalServerError, "api_error"),
        (Fault.overloaded(), anthropic.OverloadedError, "overloaded_error"),
        (
            Fault.bad_request("max_tokens: too big"),
            anthropic.BadRequestError,
            "invalid_request_error",
        ),
        (
            Fault.http_error(408, "timeout_error", "slow"),
            anthropic.RequestTimeoutError,
            "timeout_error",
        ),
    ],
)
def test_status_faults_raise_the_matching_sdk_error(
    standin: BridgeStandin,
    client: anthropic.Anthropic,
    fault: Fault,
    exc_type: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    """Each HTTP status fault surfaces as its own anthropic exception with the error body."""
    standin.script(fault)
    with pytest.raises(exc_type) as err:
        ask(client)
    assert type(err.value) is exc_type
    assert (err.value.status_code, err.value.type) == (fault.status, error_type)
    assert text_of(ask(client)) == "NONE"  # a fault is one step; the next request is fine


def test_rate_limit_carries_retry_after_headers(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """429 raises RateLimitError whose response has retry-after and retry-after-ms."""
    standin.script(Fault.rate_limited(retry_after=2, retry_after_ms=1500), Fault.rate_limited(7))
    with pytest.raises(anthropic.RateLimitError) as err:
        ask(client)
    headers = err.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("2", "1500")
    assert err.value.type == "rate_limit_error"
    with pytest.raises(anthropic.RateLimitError) as err:
        ask(client)
    assert err.value.response.headers["retry-after"] == "7"
    assert "retry-after-ms" not in err.value.response.headers


def test_malformed_json_is_a_value_error_not_an_api_error(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """A 200 with a cut-off JSON body escapes the SDK as json.JSONDecodeError (a ValueError)."""
    standin.script(Fault.malformed_json())
    with pytest.raises(ValueError) as err:
        ask(client)
    assert isinstance(err.value, json.JSONDecodeError)
    assert not isinstance(err.value, anthropic.APIError)  # the daemon must catch it itself


def test_reset_is_a_connection_error_not_a_timeout(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """The reset fault sends a TCP RST: APIConnectionError at once, caused by ECONNRESET."""
    standin.script(Fault.reset())
    started = time.monotonic()
    with pytest.raises(anthropic.APIConnectionError) as err:
        ask(client)
    assert not isinstance(err.value, anthropic.APITimeoutError)
    assert "reset" in str(err.value.__cause__).lower()
    assert time.monotonic() - started < 10.0  # not the 60 s hang
    assert len(standin.requests) == 1  # the request was read (and recorded) before the RST


def test_hang_outlasts_the_client_timeout(standin: BridgeStandin) -> None:
    """A hang longer than the client's timeout raises APITimeoutError after that timeout."""
    standin.script(Fault.hang(30))
    with anthropic.Anthropic(base_url=standin.url, api_key=TOKEN, max_retries=0, timeout=0.5) as c:
        started = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            ask(c)
        assert 0.4 < time.monotonic() - started < 10.0  # the timeout, not a hang


def test_stop_does_not_wait_for_a_hanging_request(standin: BridgeStandin) -> None:
    """stop() returns promptly mid-hang and the hanging client sees its connection die."""
    standin.script(Fault.hang(60))
    errors: list[BaseException] = []

    def call() -> None:
        with anthropic.Anthropic(
            base_url=standin.url, api_key=TOKEN, max_retries=0, timeout=60
        ) as c:
            try:
                ask(c)
            except anthropic.APIError as exc:
                errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 5
    while not standin.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    standin.stop()
    assert time.monotonic() - started < 10.0  # not the 60 s hang
    caller.join(5)
    assert not caller.is_alive()
    assert [type(e) for e in errors] == [anthropic.APIConnectionError]


def test_refusal_closes_the_real_listener_and_reopens_the_same_port(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """A refuse step after a reply: connects get ECONNREFUSED, then the same port serves again."""
    port = standin.port
    standin.script(Reply.text("before"), Fault.refuse(0.8), Reply.text("after"))
    assert text_of(ask(client)) == "before"
    for _ in range(2):
        with pytest.raises(anthropic.APIConnectionError) as err:
            ask(client)
        assert "refused" in str(err.value.__cause__).lower()
    time.sleep(1.0)
    assert text_of(ask(client)) == "after"
    assert standin.port == port
    assert len(standin.requests) == 2  # refused connects never reach the server


def test_pause_and_resume(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """pause() refuses connections until resume(), on the same port."""
    standin.pause()
    with pytest.raises(anthropic.APIConnectionError):
        ask(client)
    standin.resume()
    assert text_of(ask(client)) == "NONE"


def test_faults_compose_in_sequence(standin: BridgeStandin) -> None:
    """A whole outage script plays out in order, each request meeting the next failure."""
    standin.script(
        Fault.refuse(0.3),
        Fault.reset(),
        Fault.hang(5),
        Fault.rate_limited(retry_after_ms=10),
        Fault.overloaded(),
        Fault.malformed_json(),
        Reply.empty(),
        Reply.truncated("FACT: half"),
        Reply.text("done"),
    )
    outcomes: list[str] = []
    with anthropic.Anthropic(base_url=standin.url, api_key=TOKEN, max_retries=0, timeout=0.5) as c:
        deadline = time.monotonic() + 20
        while outcomes[-1:] != ["end_turn:done"] and time.monotonic() < deadline:
            try:
                message = ask(c)
                outcomes.append(f"{message.stop_reason}:{text_of(message)}")
            except anthropic.APIConnectionError as exc:
                cause = repr(exc.__cause__).lower()
                kinds = ("refused", "reset", "timeout", "timed out")
                outcomes.append(next((k for k in kinds if k in cause), cause))
                time.sleep(0.05)
            except (anthropic.APIError, ValueError) as exc:
                outcomes.append(type(exc).__name__)
    retried = outcomes.count("refused")
    assert retried >= 1 and outcomes[:retried] == ["refused"] * retried
    assert outcomes[retried:] == [
        "reset",
        "timeout",
        "RateLimitError",
        "OverloadedError",
        "JSONDecodeError",
        "end_turn:",
        "max_tokens:FACT: half",
        "end_turn:done",
    ]


# -- streaming -------------------------------------------------------------------------------


def test_stream_yields_scripted_text_in_several_deltas(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """messages.stream() reassembles the scripted text from multiple text deltas."""
    text = "PREFERENCE: the user likes short answers and tabs over spaces."
    standin.script(Reply.text(text))
    with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == text and len(pieces) > 1
    assert (final.stop_reason, final.model) == ("end_turn", MODEL)
    assert final.usage.input_tokens >= 1 and final.usage.output_tokens >= 1


def test_stream_tool_use_input_is_parsed(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """A streamed tool_use block arrives with its input JSON reassembled and parsed."""
    tool_input = {"file_path": "/tmp/notes.md", "content": "line one\nline two\n" * 3}
    standin.script(Reply.tool_use("Write", tool_input, text="Writing it.", id="toolu_fixed"))
    with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    text_block, tool_block = final.content
    assert text_block.type == "text" and text_block.text == "Writing it."
    assert tool_block.type == "tool_use"
    assert (tool_block.id, tool_block.name, tool_block.input) == (
        "toolu_fixed",
        "Write",
        tool_input,
    )


def test_sse_event_sequence_matches_the_api(standin: BridgeStandin) -> None:
    """The raw SSE stream has the Messages API event order, names and delta types."""
    standin.script(Reply.tool_use("Bash", {"command": "echo hi"}, text="ok"))
    body = {"model": MODEL, "max_tokens": 10, "messages": HELLO, "stream": True}
    status, raw = http(standin.url + "/v1/messages", "POST", body)
    assert status == 200
    events = [
        json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")
    ]
    names = [line[7:] for line in raw.decode().splitlines() if line.startswith("event: ")]
    assert names == [e["type"] for e in events]
    collapsed = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
    block = ["content_block_start", "content_block_delta", "content_block_stop"]
    assert collapsed == ["message_start", "ping", *block, *block, "message_delta", "message_stop"]
    deltas = {e["delta"]["type"] for e in events if e["type"] == "content_block_delta"}
    assert deltas == {"text_delta", "input_json_delta"}
    assert events[0]["message"]["stop_reason"] is None
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


# -- records ---------------------------------------------------------------------------------


def test_every_request_is_recorded_byte_for_byte(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Requests (faulted ones too) are recorded with method, path, headers, body and JSON."""
    standin.script(Fault.server_error())
    with pytest.raises(anthropic.InternalServerError):
        ask(client, "first")
    ask(client, "second")
    first, second = standin.requests
    # anthropic 2.x sends the key as a bearer token (the Claude CLI uses x-api-key).
    assert (first.method, first.path) == ("POST", "/v1/messages")
    assert first.header("AUTHORIZATION") == f"Bearer {TOKEN}"
    assert first.json is not None and first.json["messages"][0]["content"] == "first"
    assert json.loads(second.body) == second.json
    assert TOKEN.encode() in second.raw and second.raw.endswith(second.body)
    assert first.timestamp <= second.timestamp
    snapshot = standin.requests
    standin.clear_requests()
    assert standin.requests == [] and len(snapshot) == 2


def test_command_line_runs_until_sigterm(tmp_path: Path) -> None:
    """`python -m wsd.daemon.standin.bridge` prints its URL, serves, and exits 0 on SIGTERM."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "wsd.daemon.standin", "--port", "0", "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        status, raw = http(url + "/v1/messages", "POST", {"model": MODEL, "messages": HELLO})
        assert status == 200 and json.loads(raw)["content"][0]["text"] == "NONE"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        proc.kill()
        proc.wait()


# -- conversation script ---------------------------------------------------------------------


def test_conversation_script_serves_turns_only_to_main_requests() -> None:
    """Title and compaction requests get harmless answers and never consume a scripted turn."""
    script = ConversationScript([Reply.text("one"), Reply.text("two")])
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
    main: JSON = {"tools": tools, "messages": [{"role": "user", "content": "hi"}]}
    title_schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
    }
    title: JSON = {
        "tools": [],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "<session>x</session>"}]}
        ],
        "output_config": {"format": {"type": "json_schema", "schema": title_schema}},
    }
    compact: JSON = {
        "tools": tools,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "REMINDER: Do NOT call any tools."}],
            }
        ],
    }
    served = [script(b) for b in (title, main, compact, main, main)]
    texts = [s.content[0]["text"] for s in served if isinstance(s, Reply)]
    assert json.loads(texts[0]) == {"title": "stand-in"}
    assert texts[1] == "one" and texts[3] == "two"
    assert "<summary>" in texts[2]
    assert texts[4] == "(stand-in script exhausted)"
    assert [k for k, _ in script.served] == ["side", "main", "compact", "main", "main"]
    assert script.remaining == 0


# -- the real Claude Agent SDK ---------------------------------------------------------------


@pytest.mark.agent_sdk
def test_agent_sdk_runs_a_scripted_tool_call_then_answers(
    standin: BridgeStandin, tmp_path: Path
) -> None:
    """query(): the scripted Bash call really runs, the final text arrives, hooks see it."""
    sdk = pytest.importorskip("claude_agent_sdk")
    work = tmp_path / "work"
    work.mkdir()
    script = ConversationScript(
        [
            Reply.tool_use("Bash", {"command": "echo scripted > out.txt", "description": "write"}),
            Reply.text("Wrote out.txt."),
        ]
    )
    standin.responder = script
    hooks: list[JSON] = []

    async def record(data: JSON, tool_use_id: str | None, context: Any) -> JSON:
        hooks.append(dict(data))
        return {}

    options = sdk.ClaudeAgentOptions(
        env=sdk_env(standin, tmp_path),
        cwd=str(work),
        setting_sources=[],
        allowed_tools=["Bash"],  # permission_mode="bypassPermissions" is refused when root
        max_turns=3,
        hooks={
            event: [sdk.HookMatcher(hooks=[record])]
            for event in ("UserPromptSubmit", "PostToolUse", "Stop")
        },
    )

    async def session() -> list[Any]:
        return [m async for m in sdk.query(prompt="Write scripted to out.txt", options=options)]

    messages = run_async(session())
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage)
    assert (result.is_error, result.result, result.num_turns) == (False, "Wrote out.txt.", 2)
    assert (work / "out.txt").read_text() == "scripted\n"
    assert script.remaining == 0 and len(script.bodies("main")) == 2
    assert all(r.json and r.json.get("stream") is True for r in standin.requests)
    assert [h["hook_event_name"] for h in hooks] == ["UserPromptSubmit", "PostToolUse", "Stop"]
    assert hooks[1]["tool_input"]["command"] == "echo scripted > out.txt"
    assert hooks[2]["last_assistant_message"] == "Wrote out.txt."


@pytest.mark.agent_sdk
def test_agent_sdk_side_requests_and_compaction_do_not_eat_turns(
    standin: BridgeStandin, tmp_path: Path
) -> None:
    """Title generation and /compact are answered aside; settings command hooks get JSON stdin."""
    sdk = pytest.importorskip("claude_agent_sdk")
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "hooks.jsonl"
    command = f"cat >> '{log}' && echo >> '{log}'"
    events = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd"]
    settings = {
        "hooks": {e: [{"hooks": [{"type": "command", "command": command}]}] for e in events}
    }
    script = ConversationScript(
        [
            Reply.tool_use("Write", {"file_path": str(work / "a.md"), "content": "A\n"}),
            Reply.text("first done"),
            Reply.text("second done"),
        ]
    )
    standin.responder = script
    options = sdk.ClaudeAgentOptions(
        env=sdk_env(standin, tmp_path, nonessential=True),  # let the CLI send its title request
        cwd=str(work),
        setting_sources=[],
        settings=json.dumps(settings),
        allowed_tools=["Write"],
        max_turns=3,
    )

    async def session() -> list[str | None]:
        results: list[str | None] = []
        async with sdk.ClaudeSDKClient(options) as agent:
            for prompt in ("write a.md", "/compact", "and now?"):
                await agent.query(prompt)
                results += [
                    m.result
                    async for m in agent.receive_response()
                    if isinstance(m, sdk.ResultMessage)
                ]
        return results

    results = run_async(session())
    assert results[0] == "first done" and results[-1] == "second done"
    assert (work / "a.md").read_text() == "A\n"
    kinds = [kind for kind, _ in script.served]
    assert kinds.count("main") == 3 and "compact" in kinds and "side" in kinds
    assert script.remaining == 0
    deadline = time.monotonic() + 10  # SessionEnd runs as the CLI exits
    while (
        "SessionEnd" not in (log.read_text() if log.exists() else "")
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    received = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    names = [r["hook_event_name"] for r in received]
    assert names[:4] == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"]
    assert {"PreCompact", "SessionEnd"} <= set(names)
    stop = next(r for r in received if r["hook_event_name"] == "Stop")
    assert stop["last_assistant_message"] == "first done"
    assert all(r["cwd"] == str(work) and r["session_id"] for r in received)


def test_rule_curator_keeps_file_names_and_versions_inside_a_sentence() -> None:
    """The demo curator ends a sentence at '.' + space or end, not at the dot of report.pdf."""
    from wsd.daemon.curation.request.prompt import build_request
    from wsd.daemon.curation.request.rendering import render_turn
    from wsd.daemon.standin import rule_curator
    from wsd.daemon.store import Turn

    prompt = (
        "From now on save the summary as report.pdf in artifacts/ with pandoc 3.1. Remind me"
        " to send v2.1 to Paul. No, use the SAS name."
    )
    turn = render_turn(Turn(7, "s", 1, 1.7e9, prompt, [], None, "stop"))
    _system, messages = build_request({}, [], [turn])
    reply = rule_curator.curate("\n".join(b["text"] for b in messages[0]["content"])).splitlines()
    assert (
        "PREFERENCE: The user prefers save the summary as report.pdf in artifacts/ with pandoc 3.1"
        " [turn 7]"
    ) in reply
    assert "ACTION: [normal] Send v2.1 to Paul" in reply
    assert "CORRECTION: Use the SAS name [turn 7]" in reply
