"""The stand-in's Message Batches API, driven by the real `anthropic` client over real sockets.

No timed asserts: a batch that must still be in progress has an hour to go (``delay`` 3600 or a
one-hour hang step) and is ended with ``end_all``; anything awaited gets a generous deadline.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse

from tests.conftest import wait_for
from wsd.daemon.standin.bridge import JSON, BridgeStandin, Fault, Reply
from wsd.daemon.standin.message_batches import BATCHES_PATH, BatchFault, Billed

MODEL = "claude-haiku-4-5"
HOUR = 3600.0


@pytest.fixture
def standin() -> Iterator[BridgeStandin]:
    """A started stand-in on an ephemeral port, stopped after the test."""
    with BridgeStandin() as server:
        yield server


@pytest.fixture
def client(standin: BridgeStandin) -> Iterator[anthropic.Anthropic]:
    """The real SDK client as the daemon configures it: no SDK retries, explicit timeout."""
    with anthropic.Anthropic(
        base_url=standin.url, api_key="test", max_retries=0, timeout=30.0
    ) as sdk_client:
        yield sdk_client


def requests_for(*custom_ids: str) -> Any:
    """One Messages request per custom_id, each asking a different question."""
    return [
        {
            "custom_id": cid,
            "params": {
                "model": MODEL,
                "max_tokens": 100,
                "messages": [{"role": "user", "content": f"question {cid}"}],
            },
        }
        for cid in custom_ids
    ]


def create(client: anthropic.Anthropic, *custom_ids: str) -> MessageBatch:
    batch = client.messages.batches.create(requests=requests_for(*custom_ids))
    assert isinstance(batch, MessageBatch)
    return batch


def ended(client: anthropic.Anthropic, batch_id: str) -> MessageBatch:
    """Poll until the batch has ended (generous deadline)."""
    seen: list[MessageBatch] = []

    def done() -> bool:
        seen.append(client.messages.batches.retrieve(batch_id))
        return seen[-1].processing_status == "ended"

    assert wait_for(done, timeout=60), f"batch {batch_id} never ended: {seen[-1:]}"
    return seen[-1]


def results(client: anthropic.Anthropic, batch_id: str) -> dict[str, Any]:
    """custom_id -> typed result, through the SDK's results()."""
    lines = list(client.messages.batches.results(batch_id))
    assert all(isinstance(line, MessageBatchIndividualResponse) for line in lines)
    return {line.custom_id: line.result for line in lines}


def http(url: str, method: str = "GET", data: bytes | None = None) -> tuple[int, str, bytes]:
    """A plain urllib request: (status, content-type, body), errors included."""
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers["content-type"], resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["content-type"], err.read()


def raw_results(standin: BridgeStandin, batch_id: str) -> bytes:
    status, ctype, body = http(f"{standin.url}{BATCHES_PATH}/{batch_id}/results")
    assert (status, ctype) == (200, "application/binary")
    return body


def text(result: Any) -> str:
    return "".join(b.text for b in result.message.content if b.type == "text")


# -- the documented round trip -----------------------------------------------------------------


def test_create_retrieve_results_round_trip(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Create answers in_progress; the next retrieve sees it ended with counts, ended_at and an
    absolute results_url on the stand-in; results() yields typed succeeded results by custom_id."""
    standin.script(Reply.text("answer a"), Reply.text("answer b"))
    batch = create(client, "a", "b")
    assert batch.id.startswith("msgbatch_") and batch.type == "message_batch"
    assert batch.processing_status == "in_progress"
    assert batch.request_counts.to_dict() == {
        "processing": 2, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0
    }  # fmt: skip
    assert (batch.ended_at, batch.results_url, batch.cancel_initiated_at) == (None, None, None)
    assert (batch.expires_at - batch.created_at).total_seconds() == 24 * 3600
    done = ended(client, batch.id)
    assert done.request_counts.succeeded == 2 and done.request_counts.processing == 0
    assert done.ended_at is not None and done.ended_at >= done.created_at
    assert done.results_url == f"{standin.url}/v1/messages/batches/{batch.id}/results"
    got = results(client, batch.id)
    assert set(got) == {"a", "b"}
    assert [got[c].type for c in "ab"] == ["succeeded", "succeeded"]
    assert (text(got["a"]), text(got["b"])) == ("answer a", "answer b")
    assert got["a"].message.model == MODEL and got["a"].message.id.startswith("msg_")
    results_request = standin.requests[-1]
    assert results_request.header("accept") == "application/binary"


def test_results_lines_are_messages_like_v1_messages_answers(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """A succeeded line holds the Message /v1/messages would send, usage estimated from params."""
    batch = create(client, "only")
    ended(client, batch.id)
    (line,) = raw_results(standin, batch.id).splitlines()
    result = json.loads(line)
    assert result["custom_id"] == "only" and result["result"]["type"] == "succeeded"
    message = result["result"]["message"]
    assert set(message) == {
        "id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"
    }  # fmt: skip
    assert message["content"] == [{"type": "text", "text": "NONE"}]
    params = requests_for("only")[0]["params"]
    assert message["usage"]["input_tokens"] == len(json.dumps(params)) // 4


def test_delay_holds_the_batch_in_progress_until_end_all(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """With an hour's delay the batch stays in_progress (results: 400, SDK refuses); end_all
    ends it at once."""
    standin.batches.delay = HOUR
    batch = create(client, "x")
    assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    status, _ctype, body = http(f"{standin.url}{BATCHES_PATH}/{batch.id}/results")
    assert status == 400 and json.loads(body)["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        client.messages.batches.results(batch.id)
    assert standin.batches.billed == []
    standin.batches.end_all()
    assert client.messages.batches.retrieve(batch.id).processing_status == "ended"


def test_a_short_delay_passes(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """A batch ends on its own once its delay has passed."""
    standin.batches.delay = 0.2
    batch = create(client, "x")
    assert ended(client, batch.id).request_counts.succeeded == 1


# -- how requests are answered --------------------------------------------------------------


def test_responder_is_called_once_per_request(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Each request in a batch asks the responder exactly once, in request order, at creation,
    however often the batch and its results are read."""
    seen: list[JSON] = []

    def responder(body: JSON) -> Reply:
        seen.append(body)
        return Reply.text(f"echo {body['messages'][0]['content']}")

    standin.responder = responder
    batch = create(client, "r1", "r2", "r3")
    assert [b["messages"][0]["content"] for b in seen] == [
        "question r1", "question r2", "question r3"
    ]  # fmt: skip
    ended(client, batch.id)
    for _ in range(2):
        got = results(client, batch.id)
        client.messages.batches.list()
    assert len(seen) == 3
    assert text(got["r2"]) == "echo question r2"


def test_scripted_steps_are_consumed_in_request_order(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """A batch takes the queued steps in its request order, then the responder; /v1/messages
    takes the next step after it."""
    standin.script(Reply.text("one"), Reply.text("two"))
    batch = create(client, "p", "q", "r")
    assert standin.pending_steps == 0
    standin.script(Reply.text("after"))
    message = client.messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].type == "text" and message.content[0].text == "after"
    ended(client, batch.id)
    got = results(client, batch.id)
    assert [text(got[c]) for c in "pqr"] == ["one", "two", "NONE"]


def test_step_faults_become_per_request_results(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """In a batch a status fault is errored with its type; malformed garbles its line; reset is
    errored api_error; a hang holds the batch and its request expires."""
    standin.script(
        Fault.overloaded(),
        Fault.malformed_json(),
        Fault.reset(),
        Fault.hang(HOUR),
        Reply.text("fine"),
    )
    batch = create(client, "s", "m", "r", "h", "ok")
    assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
    standin.batches.end_all()
    done = ended(client, batch.id)
    assert (done.request_counts.succeeded, done.request_counts.errored) == (1, 3)
    assert done.request_counts.expired == 1
    lines = raw_results(standin, batch.id).splitlines()
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[1])
    parsed = {r["custom_id"]: r["result"] for r in map(json.loads, lines[:1] + lines[2:])}
    assert parsed["s"]["error"] == {
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}
    }  # fmt: skip
    assert parsed["r"]["error"]["error"]["type"] == "api_error"
    assert parsed["h"] == {"type": "expired"}
    assert parsed["ok"]["message"]["content"][0]["text"] == "fine"


def test_billed_is_what_the_results_report(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """billed lists each succeeded request with the usage its result carries, errors excluded."""
    standin.script(
        Reply.text("a", usage={"input_tokens": 1000, "output_tokens": 20}),
        Fault.server_error(),
        Reply.text("c"),
    )
    batch = create(client, "a", "b", "c")
    ended(client, batch.id)
    got = results(client, batch.id)
    billed = standin.batches.billed
    assert [(b.batch_id, b.custom_id) for b in billed] == [(batch.id, "a"), (batch.id, "c")]
    for entry in billed:
        assert entry.usage == got[entry.custom_id].message.usage.to_dict()
    assert billed[0].usage["input_tokens"] == 1000
    assert isinstance(billed[0], Billed)


# -- cancel, list, delete, validation ------------------------------------------------------------


def test_cancel(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """Cancel answers canceling; the batch then ends with every request canceled and nothing
    billed; a second cancel, on the ended batch, is a 400."""
    standin.batches.delay = HOUR
    batch = create(client, "c1", "c2")
    canceled = client.messages.batches.cancel(batch.id)
    assert canceled.processing_status == "canceling"
    assert canceled.cancel_initiated_at is not None
    done = client.messages.batches.retrieve(batch.id)
    assert done.processing_status == "ended" and done.request_counts.canceled == 2
    assert {r.type for r in results(client, batch.id).values()} == {"canceled"}
    assert standin.batches.billed == []
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.cancel(batch.id)


def test_list_and_delete(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """List is newest first and pages by id; delete refuses an in-progress batch (400), removes
    an ended one, which then answers 404."""
    standin.batches.delay = HOUR
    ids = [create(client, "x").id for _ in range(3)]
    page = client.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[:0:-1] and page.has_more
    assert [b.id for b in client.messages.batches.list(limit=2)] == ids[::-1]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.delete(ids[0])
    standin.batches.end_all()
    deleted = client.messages.batches.delete(ids[0])
    assert (deleted.id, deleted.type) == (ids[0], "message_batch_deleted")
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve(ids[0])
    assert [b.id for b in client.messages.batches.list()] == ids[:0:-1]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"requests": []},
        {"requests": {"custom_id": "a", "params": {}}},
        {"requests": ["a"]},
        {"requests": [{"params": {}}]},
        {"requests": [{"custom_id": "", "params": {}}]},
        {"requests": [{"custom_id": "x" * 65, "params": {}}]},
        {"requests": [{"custom_id": "has space", "params": {}}]},
        {"requests": [{"custom_id": "a", "params": {}}, {"custom_id": "a", "params": {}}]},
        {"requests": [{"custom_id": "a", "params": "not an object"}]},
        {"requests": [{"custom_id": "a"}]},
    ],
)
def test_invalid_create_bodies_are_400(standin: BridgeStandin, body: JSON) -> None:
    """A create body off the documented shape is a 400 invalid_request_error that creates
    nothing and consumes neither a step nor a batch fault."""
    standin.script(Reply.text("kept"))
    standin.batches.script(BatchFault.expired())
    status, _ctype, raw = http(standin.url + BATCHES_PATH, "POST", json.dumps(body).encode())
    assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
    assert (standin.pending_steps, standin.batches.pending_faults) == (1, 1)
    assert json.loads(http(standin.url + BATCHES_PATH)[2])["data"] == []


def test_a_64_character_custom_id_and_a_non_json_body(standin: BridgeStandin) -> None:
    """custom_id may be 64 characters of [a-zA-Z0-9_-]; a body that is not JSON is a 400."""
    body = json.dumps({"requests": [{"custom_id": "aZ09_-" + "x" * 58, "params": {}}]})
    assert http(standin.url + BATCHES_PATH, "POST", body.encode())[0] == 200
    assert http(standin.url + BATCHES_PATH, "POST", b"{not json")[0] == 400


def test_unknown_ids_and_paths_are_404(standin: BridgeStandin) -> None:
    """An unknown batch id, and a method or path the API does not have, answer 404."""
    for method, path in [
        ("GET", "/msgbatch_nope"),
        ("GET", "/msgbatch_nope/results"),
        ("POST", "/msgbatch_nope/cancel"),
        ("DELETE", ""),
    ]:
        status, _ctype, raw = http(standin.url + BATCHES_PATH + path, method)
        assert status == 404 and json.loads(raw)["error"]["type"] == "not_found_error"


def test_every_batch_request_is_recorded(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Create, retrieve, results, list and cancel all land in standin.requests, bodies kept."""
    batch = create(client, "rec")
    ended(client, batch.id)
    list(client.messages.batches.results(batch.id))
    client.messages.batches.list()
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.cancel(batch.id)
    seen = [(r.method, r.path) for r in standin.requests]
    base = f"{BATCHES_PATH}/{batch.id}"
    assert seen[0] == ("POST", BATCHES_PATH)
    assert seen[-4:] == [
        ("GET", base), ("GET", base + "/results"), ("GET", BATCHES_PATH), ("POST", base + "/cancel")
    ]  # fmt: skip
    assert standin.requests[0].json == {"requests": requests_for("rec")}


# -- batch faults -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["expired", "errored"])
def test_expired_and_errored_batches_take_no_step(
    standin: BridgeStandin, client: anthropic.Anthropic, kind: str
) -> None:
    """expired/errored: every request ends that way, no step is taken, nothing is billed; the
    next batch is normal again."""
    standin.responder = lambda body: pytest.fail("the responder was asked")
    standin.script(Reply.text("kept"))
    standin.batches.script(getattr(BatchFault, kind)())
    batch = create(client, "e1", "e2")
    done = ended(client, batch.id)
    assert done.request_counts.to_dict()[kind] == 2
    got = results(client, batch.id)
    assert {r.type for r in got.values()} == {kind}
    if kind == "errored":
        assert got["e1"].error.error.type == "api_error"
    assert standin.pending_steps == 1 and standin.batches.billed == []
    assert text(results(client, ended(client, create(client, "n").id).id)["n"]) == "kept"


def test_batch_faults_are_consumed_one_per_created_batch(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """Queued batch faults apply to the batches created next, one each, in order."""
    standin.batches.script(BatchFault.expired(), BatchFault.errored())
    assert standin.batches.pending_faults == 2
    kinds = []
    for _ in range(3):
        batch = ended(client, create(client, "f").id)
        kinds.append(next(iter(results(client, batch.id).values())).type)
    assert kinds == ["expired", "errored", "succeeded"]
    assert standin.batches.pending_faults == 0


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (404, anthropic.NotFoundError),
        (405, anthropic.APIStatusError),
        (501, anthropic.APIStatusError),
    ],
)
def test_unsupported_create(
    standin: BridgeStandin, client: anthropic.Anthropic, status: int, error: type[Exception]
) -> None:
    """unsupported(status): that create answers the status and creates nothing; the next works."""
    standin.batches.script(BatchFault.unsupported(status))
    with pytest.raises(error) as caught:
        create(client, "u")
    assert isinstance(caught.value, anthropic.APIStatusError)
    assert caught.value.status_code == status
    assert client.messages.batches.list().data == []
    assert standin.pending_steps == 0 and standin.batches.pending_faults == 0
    create(client, "u")


def test_unsupported_create_answering_html(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """unsupported(200): a 200 whose body is an HTML page; the SDK hands back a str."""
    standin.batches.script(BatchFault.unsupported(200))
    answer: Any = client.messages.batches.create(requests=requests_for("h"))
    assert isinstance(answer, str) and answer.startswith("<!doctype html>")
    assert client.messages.batches.list().data == []


def test_batches_disabled(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """enabled=False: every batch path answers 404 (created batches too); /v1/messages works."""
    batch = create(client, "d")
    standin.batches.enabled = False
    for call in (
        lambda: create(client, "d"),
        lambda: client.messages.batches.retrieve(batch.id),
        lambda: client.messages.batches.list(),
    ):
        with pytest.raises(anthropic.NotFoundError):
            call()
    client.messages.create(model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    standin.batches.enabled = True
    assert client.messages.batches.retrieve(batch.id).id == batch.id


def test_truncated_results(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """truncated: the results stop in the middle of the last line, whole lines before it."""
    standin.batches.script(BatchFault.truncated())
    batch = create(client, "t1", "t2")
    ended(client, batch.id)
    with pytest.raises(json.JSONDecodeError):
        results(client, batch.id)
    body = raw_results(standin, batch.id)
    first, rest = body.split(b"\n", 1)
    assert json.loads(first)["custom_id"] == "t1"
    assert rest.startswith(b'{"custom_id": "t2"') and b"\n" not in rest


def test_truncated_results_with_a_dropped_connection(
    standin: BridgeStandin, client: anthropic.Anthropic
) -> None:
    """truncated(drop=True): the content-length promises the whole, the connection is reset at
    the cut: reading the results fails, not with a JSON error."""
    standin.batches.script(BatchFault.truncated(drop=True))
    batch = create(client, "t1", "t2")
    ended(client, batch.id)
    with pytest.raises(Exception) as caught:
        results(client, batch.id)
    assert type(caught.value).__name__ in ("ReadError", "RemoteProtocolError")  # httpx's


def test_malformed_line(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """malformed_line: the first line is garbage (newline-terminated), the others parse; the
    garbled request still succeeded and is billed."""
    standin.batches.script(BatchFault.malformed_line())
    batch = create(client, "g1", "g2")
    ended(client, batch.id)
    with pytest.raises(json.JSONDecodeError):
        results(client, batch.id)
    first, second = raw_results(standin, batch.id).splitlines()
    with pytest.raises(json.JSONDecodeError):
        json.loads(first)
    assert json.loads(second)["custom_id"] == "g2"
    assert [b.custom_id for b in standin.batches.billed] == ["g1", "g2"]


def test_missing_line(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """missing: the first request's line is absent though the counts say it succeeded."""
    standin.batches.script(BatchFault.missing())
    batch = create(client, "m1", "m2")
    assert ended(client, batch.id).request_counts.succeeded == 2
    assert set(results(client, batch.id)) == {"m2"}
    assert [b.custom_id for b in standin.batches.billed] == ["m1", "m2"]


@pytest.mark.parametrize("on", ["retrieve", "results"])
def test_hang_then_reset_once(standin: BridgeStandin, client: anthropic.Anthropic, on: str) -> None:
    """hang(s, on): the first retrieve (or results) of the batch gets nothing, then a reset; the
    next one is answered."""
    standin.batches.script(BatchFault.hang(0.2, on=on))  # type: ignore[arg-type]
    batch = create(client, "h")
    call = client.messages.batches.retrieve if on == "retrieve" else client.messages.batches.results
    if on == "results":
        ended(client, batch.id)
    with pytest.raises(anthropic.APIConnectionError):
        call(batch.id)
    assert set(results(client, ended(client, batch.id).id)) == {"h"}


def test_stop_wakes_a_hang(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """stop() cuts an hour-long results hang short: the client sees the connection die."""
    standin.batches.script(BatchFault.hang(HOUR))
    batch = create(client, "h")
    ended(client, batch.id)
    outcome: list[BaseException] = []

    def fetch() -> None:
        try:
            list(client.with_options(timeout=HOUR).messages.batches.results(batch.id))
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=fetch, daemon=True)
    worker.start()
    assert wait_for(lambda: standin.requests[-1].path.endswith("/results"), timeout=30)
    standin.stop()
    worker.join(timeout=60)
    assert not worker.is_alive(), "stop() left the hang running"
    assert isinstance(outcome[0], anthropic.APIConnectionError)
    assert not isinstance(outcome[0], anthropic.APITimeoutError)


def test_foreign_results_url(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """foreign_results_url: results_url leaves the Bridge for api.anthropic.com (never fetched
    here); the stand-in's own results path still serves the lines."""
    standin.batches.script(BatchFault.foreign_results_url())
    batch = create(client, "f")
    url = ended(client, batch.id).results_url
    assert url == f"https://api.anthropic.com/v1/messages/batches/{batch.id}/results"
    assert json.loads(raw_results(standin, batch.id))["custom_id"] == "f"


def test_lost_batch(standin: BridgeStandin, client: anthropic.Anthropic) -> None:
    """lost: the create answers, then the batch is 404 everywhere and absent from the list; its
    requests were answered and are billed all the same."""
    standin.batches.script(BatchFault.lost())
    batch = create(client, "l1", "l2")
    for call in (
        client.messages.batches.retrieve,
        client.messages.batches.cancel,
        client.messages.batches.results,
    ):
        with pytest.raises(anthropic.NotFoundError):
            call(batch.id)
    assert client.messages.batches.list().data == []
    assert [b.custom_id for b in standin.batches.billed] == ["l1", "l2"]
