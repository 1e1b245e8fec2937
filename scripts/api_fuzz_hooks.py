"""schemathesis hooks for scripts/api-fuzz: streams that never end by
themselves (a live fetch's `watch`, a history `follow`) are turned into
their one-shot form, so every request gets a whole answer to check."""
import schemathesis


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if isinstance(case.body, dict) and case.body.get("watch") is not None:
        case.body["watch"] = False
    if isinstance(case.query, dict) and "follow" in case.query:
        case.query["follow"] = "false"
