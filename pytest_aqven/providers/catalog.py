"""The catalog prefixes: default base URL of each one's OpenAI-compatible chat-completions endpoint and
the environment variables its key is read from (reference §4.3). A provider's `base_url` overrides the
default; `api_key: "ref:env/NAME"` overrides the variables."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Entry:
    base_url: str | None
    key_vars: tuple[str, ...]
    key_required: bool = True
    price_list: bool = False          # serves OpenRouter's public model price list at <base_url>/models
    unsupported: str | None = None    # why this engine cannot call it


def _e(url: str | None, *keys: str, required: bool = True, **kw: Any) -> Entry:
    return Entry(url, keys, required, **kw)


CATALOG: dict[str, Entry] = {
    "openai": _e("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openai-chat": _e("https://api.openai.com/v1", "OPENAI_API_KEY"),
    "openai-responses": _e(None, "OPENAI_API_KEY", unsupported="the Responses API is not spoken here; "
                                                             "use the prefix openai-chat"),
    "openrouter": _e("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", price_list=True),
    "deepseek": _e("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "together": _e("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks": _e("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "moonshotai": _e("https://api.moonshot.ai/v1", "MOONSHOTAI_API_KEY"),
    "nebius": _e("https://api.studio.nebius.com/v1", "NEBIUS_API_KEY"),
    "ovhcloud": _e("https://oai.endpoints.kepler.ai.cloud.ovh.net/v1", "OVHCLOUD_API_KEY"),
    "alibaba": _e("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "ALIBABA_API_KEY", "DASHSCOPE_API_KEY"),
    "sambanova": _e("https://api.sambanova.ai/v1", "SAMBANOVA_API_KEY"),
    "vercel": _e("https://ai-gateway.vercel.sh/v1", "VERCEL_AI_GATEWAY_API_KEY"),
    "heroku": _e("https://us.inference.heroku.com/v1", "HEROKU_INFERENCE_KEY"),
    "litellm": _e("http://localhost:4000/v1", "LITELLM_API_KEY", required=False),
    "vllm": _e("http://localhost:8000/v1", "VLLM_API_KEY", required=False),
    "ollama": _e("http://localhost:11434/v1", "OLLAMA_API_KEY", required=False),
    "cerebras": _e("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
    "crusoe": _e("https://managed-inference-api-proxy.crusoecloud.com/v1", "CRUSOE_API_KEY"),
    "zai": _e("https://api.z.ai/api/paas/v4", "ZAI_API_KEY"),
    # these speak their own protocols natively; each also serves an OpenAI-compatible endpoint
    "anthropic": _e("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
    "google": _e("https://generativelanguage.googleapis.com/v1beta/openai", "GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "groq": _e("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": _e("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "cohere": _e("https://api.cohere.ai/compatibility/v1", "CO_API_KEY"),
    "huggingface": _e("https://router.huggingface.co/v1", "HF_TOKEN"),
    "xai": _e("https://api.x.ai/v1", "XAI_API_KEY"),
    "bedrock": _e(None, required=False, unsupported="Bedrock signs requests with the AWS credential chain, "
                                                    "which this engine does not; use an openai_compatible gateway"),
}
