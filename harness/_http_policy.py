"""A policy served by any OpenAI-compatible chat endpoint (vLLM, SGLang, a hosted API).

Uses only the standard library, so evaluating a served model needs no extra install.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from hscale.errors import HscaleError
from hscale.harness._engine import Generation
from hscale.harness._types import Message


def probe(base_url: str, api_key: str | None = None, timeout: float = 5.0) -> None:
    """Refuse, in one line, an endpoint that does not answer as an OpenAI-compatible server
    (nothing listening, a wrong host, no reply in ``timeout`` s, no ``{base_url}/models``):
    ``GET {base_url}/models``. A refusal for want of a key (401, 403) or a server error
    (5xx) still means a server is there; its requests then say what is wrong."""
    request = urllib.request.Request(
        base_url.rstrip("/") + "/models",
        headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403) or exc.code >= 500:
            return
        raise HscaleError(f"endpoint {base_url}: GET /models answers {exc.code} {exc.reason}: "
                          "not an OpenAI-compatible API there",
                          "give the base URL that ends in /v1 (as for the OpenAI "
                          "client)") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", None) or exc
        raise HscaleError(f"endpoint {base_url}: no answer ({why})",
                          "start the server first, or check the host, port and that the URL "
                          "ends in /v1") from None


@dataclass
class OpenAIChatPolicy:
    """POSTs the harness's view to ``{base_url}/chat/completions`` and returns the reply.

    Tool observations go out as ``user`` messages, since the harness renders tool results
    as text in its own format rather than through the endpoint's tool-calling API; a server
    whose template has a plain tool role (``hscale serve``) takes ``tool_role="tool"``.
    """

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    timeout: float = 60.0
    extra: dict = field(default_factory=dict)
    tool_role: str = "user"

    def generate(self, messages: list[Message]) -> Generation:
        body = {
            "model": self.model,
            "messages": [{"role": self.tool_role if m.role == "tool" else m.role,
                          "content": m.content} for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "logprobs": True,
            **self.extra,
        }
        request = urllib.request.Request(
            self.base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                reply = json.load(response)
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise HscaleError(f"endpoint {self.base_url} failed: {exc}",
                              "check the server is running and the URL ends in /v1") from None
        try:
            choice = reply["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise HscaleError(f"endpoint {self.base_url} sent no choices[0].message.content",
                              "check it speaks the OpenAI chat-completions API") from None
        content = (choice.get("logprobs") or {}).get("content") or []
        logprobs = tuple(float(t["logprob"]) for t in content if "logprob" in t) or None
        return Generation(text, logprobs=logprobs)
