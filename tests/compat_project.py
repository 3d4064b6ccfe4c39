"""A project of our own shaped like AQVEN's public showcase (package `spoke`, a bicycle repair desk),
written from scratch. It uses every key of AQVEN's project model that pytest-aqven must accept:
agents with tools, MCP servers, subagents, tool approval and an instructions file; constrained fields;
an inference with prompt variants (chosen by a reference or, as AQVEN also reads it, an input path),
allowed_sets, examples, checks (functions beside the inference file) and a display template; a Dynamic
output narrowed to a union type; id, union, enum and value types; media fields; tool, human, narrow,
switch, llm, parallel and code nodes; a parallel whose custom join is typed `JoinState[Grade]`; local
flows (one written as flow.py, reusing a project inference) and a variant's own node; and user code that
imports `spoke.types` (with the generated `<Experiment><Flow><Node>Out` and `<Experiment><Node>Out`
names) and the names of AQVEN's Python API (GENERATED_CONFIG among them)."""
from __future__ import annotations

from pathlib import Path

from .projects import write_files


def settling_node(run: str, description: str, agreed: str) -> str:
    """A code node that settles the panel's grades on one call (the flow's own, or a variant's)."""
    return f'''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "{description}"
        run: "{run}"
        in:
        - name: "grades"
          type: "Grade[]"
          description: "The graders' calls"
          maxItems: 3
          from: "$graders.out.grades"
        out:
        - name: "verdict"
          type: "Text"
          description: "The panel's call"
          maxLength: 40
        - name: "agreed"
          type: "Bool"
          description: "{agreed}"
        '''


FILES: dict[str, str] = {
    "aqven.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Project"
        description: "Spoke: the repair desk of a bicycle shop"
        package: "spoke"
        providers:
        - id: "sim"
          kind: "code"
          run: "@root.provider:complete"
          data_policy:
            allows_pii: true
            allows_sensitive: false
            retention: "zero"
          limits:
            rpm: 120
          on_rate_limit: "fixed"
          retry_wait_seconds: 2
          retry_attempts: 3
        policies:
          pii:
            mask_in_traces: true
            redact: ["email", "phone"]
          trust:
            default_in: "untrusted"
        limits:
          requests: 50
          seconds: 60
        research:
          spend_cap_usd: 1.00
        renames:
        - kind: "node"
          from: "repair.diagnose"
          to: "repair.triage"
          at: "2026-10-01T09:00:00Z"
        ''',
    "provider.py": '''
        import json

        from pytest_aqven import ModelResponse


        def complete(request):
            """Answers every schema with small valid values: enough for a flow to run offline."""
            props = (request.output_schema or {}).get("properties", {})
            answer = {}
            for name, prop in props.items():
                kind = prop.get("type")
                answer[name] = {"string": "a tidy reply", "integer": 1, "number": 0.9, "boolean": True,
                                "array": []}.get(kind, "a tidy reply")
            return ModelResponse(text=json.dumps(answer), tokens_in=10, tokens_out=5, cost_usd=0.0001)
        ''',
    # --- types -----------------------------------------------------------------------------------
    "types/records/customer.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "Who writes to the desk"
        pii: "pii"
        fields:
        - name: "customer_id"
          type: "CustomerId"
          description: "The shop's customer number"
        - name: "name"
          type: "Text"
          description: "The customer's name"
          minLength: 1
          maxLength: 80
        - name: "locale"
          type: "Locale"
          description: "Language of the customer"
        ''',
    "types/records/ticket_request.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "A repair ticket as it arrives"
        fields:
        - name: "customer"
          type: "Customer"
          description: "Who wrote"
        - name: "channel"
          type: "Channel"
          description: "How the ticket arrived"
        - name: "message"
          type: "Text"
          description: "What the customer wrote"
          maxLength: 2000
        - name: "photo"
          type: "Image?"
          description: "A photo of the bike; null when there is none"
        - name: "receipt"
          type: "Document?"
          description: "The purchase receipt; null when there is none"
        ''',
    "types/records/part.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "A spare part in stock"
        fields:
        - name: "part_id"
          type: "PartId"
          description: "Stock number"
        - name: "label"
          type: "Text"
          description: "What the part is"
          maxLength: 60
        - name: "price"
          type: "Float"
          description: "Price in euros"
          minimum: 0
          exclusiveMaximum: 10000
        ''',
    "types/records/answer.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "What the desk sends back"
        fields:
        - name: "reply"
          type: "Text"
          description: "The reply to the customer"
          maxLength: 800
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        - name: "approved"
          type: "Bool"
          description: "A person approved the reply"
        ''',
    "types/records/approval.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "The form the workshop lead fills"
        fields:
        - name: "approved"
          type: "Bool"
          description: "Send the reply as it is"
        - name: "note"
          type: "Text?"
          description: "Why not; null when approved"
          maxLength: 200
        ''',
    "types/records/draft_request.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "What a reply draft needs"
        fields:
        - name: "summary"
          type: "Text"
          description: "The ticket in a sentence"
          maxLength: 300
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        ''',
    "types/records/draft.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "A reply draft"
        fields:
        - name: "reply"
          type: "Text"
          description: "The draft"
          maxLength: 800
        ''',
    "types/records/grade.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "One grader's call on a draft"
        fields:
        - name: "verdict"
          type: "Text"
          description: "Send the draft or hold it"
          maxLength: 40
        - name: "score"
          type: "Score"
          description: "How sure the grader is"
        ''',
    "types/records/panel_call.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "What the grading panel settles on"
        fields:
        - name: "verdict"
          type: "Text"
          description: "The panel's call"
          maxLength: 40
        - name: "agreed"
          type: "Bool"
          description: "A majority of the graders made that call"
        ''',
    "types/enums/channel.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "enum"
        description: "Where a ticket comes from"
        values:
        - value: "web"
          description: "The web form"
        - value: "phone"
          description: "A call, transcribed"
        ''',
    "types/enums/repair_action.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "enum"
        description: "What the shop does about a ticket"
        values:
        - value: "fix"
          description: "Repair in the workshop"
        - value: "refund"
          description: "Give the money back"
        - value: "advise"
          description: "Answer a question"
        ''',
    "types/ids/customer_id.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "id"
        description: "A customer number"
        pattern: "^c_[0-9]{4}$"
        code_format: "identity"
        ''',
    "types/ids/part_id.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "id"
        description: "A stock number of a part"
        pattern: "^p_[a-z0-9]{3,8}$"
        maxLength: 10
        allowed_set: "dynamic"
        ''',
    "types/unions/ticket_form.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "union"
        description: "The ticket form, by kind"
        discriminator: "kind"
        variants:
        - name: "repair"
          description: "Something is broken"
          fields:
          - name: "part_id"
            type: "PartId?"
            description: "The broken part; null when unknown"
          - name: "urgent"
            type: "Bool"
            description: "The bike is needed today"
        - name: "question"
          description: "A question with no claim"
          fields:
          - name: "topic"
            type: "Text"
            description: "What the question is about"
            maxLength: 100
        ''',
    "types/values/score.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "value"
        description: "A score between 0 and 1"
        base: "Float"
        minimum: 0
        maximum: 1
        ''',
    # --- agents, tools, MCP ----------------------------------------------------------------------
    "agents/expert.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "Reads tickets"
        model: "sim:expert-1"
        settings:
          temperature: 0
          max_tokens: 800
        output:
          mode: "prompted"
          strict: false
          retries: 2
        capabilities:
          family: "other"
          input: ["text", "image"]
        ''',
    "agents/writer.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "Writes replies"
        model: "sim:writer-1"
        output:
          mode: "prompted"
        ''',
    "agents/mechanic/mechanic.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "Decides repairs with the parts catalog and an expert to ask"
        model: "sim:mechanic-1"
        fallback_models: ["sim:mechanic-0"]
        output:
          mode: "native"
          on_error: "fallback"
        instructions: "./mechanic.instructions.md"
        tools:
        - "lookup_part"
        - "find_history"
        mcp_servers:
        - "catalog"
        subagents:
        - name: "parts_expert"
          description: "Knows which part fits which bike"
          agent: "expert"
          inference: "triage"
        approval:
          tools:
          - "lookup_part"
          assignee: "workshop_lead"
          timeout_seconds: 600
          on_timeout:
            policy: "default"
            value: {approved: false}
        limits:
          requests: 8
          tool_calls: 6
          usd_micros: 20000
        ''',
    "agents/mechanic/mechanic.instructions.md": "You repair bicycles. Ask the parts expert before you order a part.\n",
    "mcp/catalog.yaml": '''
        apiVersion: "aqven/v1"
        kind: "McpServer"
        description: "The supplier's parts catalog"
        transport: "streamable_http"
        url: "https://catalog.example/mcp"
        headers:
        - name: "Authorization"
          value: "ref:env/CATALOG_TOKEN"
        ''',
    "tools/lookup_part.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Tool"
        description: "Looks a part up in the stock"
        run: "@root.tools.functions:lookup_part"
        effect: "read"
        idempotency_key: ["part_id"]
        secrets:
        - name: "stock_token"
          ref: "ref:env/STOCK_TOKEN"
        in:
        - name: "part_id"
          type: "PartId"
          description: "The part"
        out:
        - name: "part"
          type: "Part?"
          description: "The part; null when it is not in stock"
        ''',
    "tools/find_history.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Tool"
        description: "Earlier tickets of the customer"
        mcp:
          server: "catalog"
          tool: "history"
        effect: "read"
        ''',
    "tools/print_label.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Tool"
        description: "Prints the workshop label of a repair, a job the label printer finishes later"
        run: "@root.tools.functions:start_label"
        effect: "external"
        idempotency_key: ["reply"]
        wait:
          poll: "@root.tools.functions:poll_label"
          interval_seconds: 1
          timeout_seconds: 10
        in:
        - name: "reply"
          type: "Text"
          description: "The reply the label quotes"
          maxLength: 800
        out:
        - name: "label_id"
          type: "Text"
          description: "The printed label"
          maxLength: 80
        ''',
    "tools/functions.py": '''
        from aqven.runtime import JobDone, JobHandle, JobPending, JobPoll, ToolContext
        from spoke.types import LookupPartOut, Part, PartIdField, PrintLabelOut

        POLLS: dict[str, int] = {}


        async def lookup_part(ctx: ToolContext, part_id: PartIdField) -> LookupPartOut:
            token = ctx.secret("stock_token")
            found = Part(part_id=part_id, label="brake pad", price=12.5) if token else None
            return LookupPartOut(part=found)


        async def start_label(ctx: ToolContext, reply: str) -> JobHandle:
            stored = await ctx.blobs.put(reply.encode(), "text/plain", "label.txt")
            return JobHandle(job_id=f"{ctx.idempotency_key[:12]}:{stored.blob_id}", provider="label_printer")


        async def poll_label(ctx: ToolContext, job: JobHandle) -> JobPoll[PrintLabelOut]:
            POLLS[job.job_id] = POLLS.get(job.job_id, 0) + 1
            if POLLS[job.job_id] == 1:
                return JobPending(progress=0.5)
            text = (await ctx.blobs.get({"blob_id": job.job_id.split(":")[1]})).decode()
            return JobDone(value=PrintLabelOut(label_id=f"label {len(text)} chars"))
        ''',
    "code/rules.py": '''
        from aqven.policies import EvalContext, NoParams, Verdict
        from spoke.types import Answer, TicketRequest


        def polite(value: Answer, context: EvalContext[TicketRequest, Answer], params: NoParams) -> Verdict:
            rude = any(word in value.reply.lower() for word in ("stupid", "whatever"))
            return Verdict(passed=not rude, reason="the reply is rude" if rude else None)
        ''',
    "samples/bike.jpg": "not really a jpeg\n",
    # --- the repair flow -------------------------------------------------------------------------
    "flows/repair/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "A repair ticket: read it, fill the form, decide, reply, approve"
        input: "TicketRequest"
        output: "Answer"
        context: ["date"]
        order: ["prepare", "triage", "to_form", "route", "lookup", "draft", "approve", "finish", "label"]
        returns:
        - name: "reply"
          from: "$finish.out.reply"
        - name: "action"
          from: "$finish.out.action"
        - name: "approved"
          from: "$finish.out.approved"
        ''',
    "flows/repair/nodes/prepare/prepare.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Cleans the message and lists the form fields and the parts in stock"
        run: "prepare"
        in:
        - name: "request"
          type: "TicketRequest"
          description: "The whole ticket"
          from: "$input"
        out:
        - name: "message"
          type: "Text"
          description: "The message, whitespace normalized"
          maxLength: 2000
        - name: "form_fields"
          type: "FieldSpec[]"
          description: "The fields of the ticket form"
          maxItems: 6
        - name: "parts"
          type: "Part[]"
          description: "Parts in stock"
          minItems: 1
          maxItems: 20
        ''',
    "flows/repair/nodes/prepare/prepare.py": '''
        from aqven.spec import FieldSpec
        from spoke.types import Part, PartId, RepairPrepareOut, TicketRequest

        FORM = (
            FieldSpec(name="kind", type="Text", description="repair or question", enum=["repair", "question"]),
            FieldSpec(name="urgent", type="Bool?", description="Needed today"),
        )


        def prepare(request: TicketRequest) -> RepairPrepareOut:
            stock = [Part(part_id=PartId("p_brake1"), label="brake pad", price=12.5)]
            return RepairPrepareOut(message=" ".join(request.message.split()), form_fields=list(FORM), parts=stock)
        ''',
    "flows/repair/nodes/triage/triage.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Reads the ticket and fills the form"
        agent: "expert"
        in:
        - name: "message"
          from: "$prepare.out.message"
        - name: "channel"
          from: "$input.channel"
        - name: "parts"
          from: "$prepare.out.parts"
        - name: "form_fields"
          from: "$prepare.out.form_fields"
        - name: "photo"
          from: "$input.photo"
        ''',
    "flows/repair/nodes/triage/triage.inference.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Inference"
        description: "The ticket read: a summary, the action, the broken part and the form"
        in:
        - name: "message"
          type: "Text"
          description: "The message"
          maxLength: 2000
        - name: "channel"
          type: "Channel"
          description: "How it arrived"
        - name: "parts"
          type: "Part[]"
          description: "Parts in stock"
          maxItems: 20
        - name: "form_fields"
          type: "FieldSpec[]"
          description: "The fields of the form"
          maxItems: 6
        - name: "photo"
          type: "Image?"
          description: "A photo; null when there is none"
        out:
        - name: "summary"
          type: "Text"
          description: "The ticket in a sentence, written first"
          minLength: 5
          maxLength: 300
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        - name: "part_id"
          type: "PartId?"
          description: "The broken part; null when none"
        - name: "form"
          type: "Dynamic"
          description: "The form, against the fields from the input"
          schema_from: "$in.form_fields"
          value_type: "TicketForm"
          limits:
            max_fields: 6
            max_depth: 1
            max_text_length: 200
            max_items: 5
        variants:
          tone:
            on: "$in.channel"
            cases:
              web: "written"
              phone: "spoken"
            default: "written"
        allowed_sets:
        - type: "PartId"
          from: "$in.parts[*].part_id"
          labels_from: "$in.parts[*].label"
        examples:
        - name: "squeaky_brake"
          in:
            message: "My brake squeaks"
            channel: "web"
          out:
            summary: "A squeaky brake"
            action: "fix"
        checks:
        - use: "not_empty"
          with:
            field: "$out.summary"
          on_fail: "retry"
        - run: "summary_first"
          on_fail: "flag"
        display:
          output:
            template: "triage.output.display.liquid"
            variables:
              summary: "$out.summary"
        ''',
    "flows/repair/nodes/triage/triage.prompt.md": "Read the repair ticket and fill the form. {{ variants.tone }}\n{{ output_format }}\n",
    "flows/repair/nodes/triage/triage.variants/tone/written.md": "Answer in full sentences.\n",
    "flows/repair/nodes/triage/triage.variants/tone/spoken.md": "The text is a call transcript: expect filler words.\n",
    "flows/repair/nodes/triage/triage.output.display.liquid": "<b>{{ summary }}</b>\n",
    "flows/repair/nodes/triage/triage.py": '''
        from aqven.policies import EvalContext, NoParams, Verdict
        from spoke.types import TriageIn, TriageOut


        def summary_first(value: TriageOut, context: EvalContext[TriageIn, TriageOut], params: NoParams) -> Verdict:
            short = len(value.summary.split()) <= 40
            return Verdict(passed=short, score=1.0 if short else 0.0, reason=None if short else "summary too long")
        ''',
    "flows/repair/nodes/to_form/to_form.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "narrow"
        description: "The dynamic form as the ticket form type"
        from: "$triage.out.form"
        to: "TicketForm"
        ''',
    "flows/repair/nodes/route/route.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "switch"
        description: "Repairs go to the mechanic, questions get advice"
        on: "$to_form.out"
        cases:
          repair:
            node: "decide"
            bind:
            - name: "action"
              from: "$decide.out.action"
          question:
            bind:
            - name: "action"
              value: "advise"
        out:
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        ''',
    "flows/repair/nodes/route/decide.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "The mechanic decides, with tools and an expert"
        agent: "mechanic"
        in:
        - name: "summary"
          from: "$triage.out.summary"
        - name: "form"
          from: "$case"
        ''',
    "flows/repair/nodes/route/decide.inference.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Inference"
        description: "A repair decision"
        in:
        - name: "summary"
          type: "Text"
          description: "The ticket in a sentence"
        - name: "form"
          type: "TicketForm"
          description: "The ticket form"
        out:
        - name: "rationale"
          type: "Text"
          description: "Why, written before the action"
          maxLength: 400
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        ''',
    "flows/repair/nodes/route/decide.prompt.md": "Decide what the workshop does about this ticket.\n",
    "flows/repair/nodes/lookup/lookup.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "tool"
        description: "Looks the broken part up"
        tool: "lookup_part"
        in:
        - name: "part_id"
          from: "$triage.out.part_id"
        ''',
    "flows/repair/nodes/draft/draft.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Writes the reply"
        agent: "writer"
        in:
        - name: "summary"
          from: "$triage.out.summary"
        - name: "action"
          from: "$route.out.action"
        ''',
    "flows/repair/nodes/draft/draft.inference.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Inference"
        description: "A reply to the customer"
        in:
        - name: "summary"
          type: "Text"
          description: "The ticket in a sentence"
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        out:
        - name: "reply"
          type: "Text"
          description: "The reply"
          maxLength: 800
        variants:
          closing:
            on: "action"
            cases:
              refund: "refund"
            default: "thanks"
        checks:
        - run: "short_enough"
          on_fail: "flag"
        ''',
    "flows/repair/nodes/draft/draft.prompt.md": "Write a short, friendly reply that states the action. {{ variants.closing }}\n",
    "flows/repair/nodes/draft/draft.variants/closing/refund.md": "Say when the money is back on the card.\n",
    "flows/repair/nodes/draft/draft.variants/closing/thanks.md": "Thank the customer for riding with us.\n",
    "flows/repair/nodes/draft/draft.py": '''
        from aqven.policies import EvalContext, NoParams, Verdict
        from spoke.types import DraftIn, DraftOut


        def short_enough(value: DraftOut, context: EvalContext[DraftIn, DraftOut], params: NoParams) -> Verdict:
            words = len(value.reply.split())
            return Verdict(passed=words <= 120, reason=None if words <= 120 else f"{context.inputs.action}: {words} words")
        ''',
    "flows/repair/nodes/approve/approve.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "human"
        description: "The workshop lead approves the reply"
        form: "Approval"
        assignee: "workshop_lead"
        timeout_seconds: 3600
        on_timeout:
          policy: "escalate"
          assignee: "shop_owner"
          timeout_seconds: 7200
        in:
        - name: "reply"
          type: "Text"
          description: "The draft"
          from: "$draft.out.reply"
        - name: "part"
          type: "Part?"
          description: "The part, when one is needed"
          from: "$lookup.out.part"
        ''',
    "flows/repair/nodes/finish/finish.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "The answer"
        run: "finish"
        in:
        - name: "reply"
          type: "Text"
          description: "The draft"
          from: "$draft.out.reply"
        - name: "action"
          type: "RepairAction"
          description: "The action"
          from: "$route.out.action"
        - name: "approval"
          type: "Approval"
          description: "The lead's answer"
          from: "$approve.out"
        out:
        - name: "reply"
          type: "Text"
          description: "The reply"
          maxLength: 800
        - name: "action"
          type: "RepairAction"
          description: "The action"
        - name: "approved"
          type: "Bool"
          description: "Approved by the lead"
        ''',
    "flows/repair/nodes/label/label.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "tool"
        description: "Prints the workshop label"
        tool: "print_label"
        in:
        - name: "reply"
          from: "$finish.out.reply"
        ''',
    "flows/repair/nodes/finish/finish.py": '''
        from spoke.types import Approval, RepairAction, RepairFinishOut


        def finish(reply: str, action: RepairAction, approval: Approval) -> RepairFinishOut:
            return RepairFinishOut(reply=reply, action=action, approved=approval.approved)
        ''',
    # --- datasets --------------------------------------------------------------------------------
    "datasets/repair_tickets.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Dataset"
        flow: "repair"
        cases:
        - name: "squeaky_brake"
          inputs:
            customer: {customer_id: "c_0001", name: "Ada", locale: "en-GB"}
            channel: "web"
            message: "My front brake squeaks."
            photo: {"$media": "image/jpeg", "file": "@root/samples/bike.jpg"}
          context: {date: "2026-10-02"}
          node_outputs:
            prepare:
              message: "My front brake squeaks."
              form_fields: []
              parts: [{part_id: "p_brake1", label: "brake pad", price: 12.5}]
          tags: {kind: "repair"}
          expected_output: {action: "fix"}
        - name: "saddle_height"
          inputs:
            customer: {customer_id: "c_0002", name: "Bo", locale: "de-DE"}
            channel: "phone"
            message: "How high should my saddle be?"
          context: {date: "2026-10-02"}
          node_outputs:
            prepare:
              message: "How high should my saddle be?"
              form_fields: []
              parts: [{part_id: "p_brake1", label: "brake pad", price: 12.5}]
          tags: {kind: "question"}
          expected_output: {action: "advise"}
        ''',
    "datasets/drafts.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Dataset"
        cases:
        - name: "brake_fix"
          inputs: {summary: "A squeaky brake", action: "fix"}
          expected_output: {reply: "We fix it."}
        - name: "refund_gift"
          inputs: {summary: "An unwanted gift", action: "refund"}
          expected_output: {reply: "We refund it."}
        ''',
    # --- experiments -----------------------------------------------------------------------------
    "experiments/repair_look/experiment.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "How the whole desk answers"
        subject:
          flow: "repair"
        cases:
          dataset: "repair_tickets"
        variants:
        - id: "current"
        checks:
        - id: "action"
          kind: "binary"
          use: "expected"
          with:
            fields: ["action"]
        - id: "polite"
          kind: "binary"
          run: "@root.code.rules:polite"
        question:
          kind: "look"
        ''',
    "experiments/draft_writers/experiment.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "Which agent writes replies that name the action"
        subject:
          flow: "drafting"
        varies:
          what: "agent"
          nodes: ["write"]
        cases:
          dataset: "drafts"
        variants:
        - id: "writer"
        - id: "expert"
          nodes:
            write: "expert"
        checks:
        - id: "names_action"
          kind: "binary"
          run: "@root.experiments.draft_writers.checks:names_action"
        question:
          kind: "compare"
          baseline: "writer"
          candidate: "expert"
          primary: "names_action"
          margin: 0.1
        ''',
    "experiments/draft_writers/checks.py": '''
        from aqven.policies import EvalContext, NoParams, Verdict
        from spoke.types import Draft, DraftRequest


        def names_action(value: Draft, context: EvalContext[DraftRequest, Draft], params: NoParams) -> Verdict:
            named = context.inputs.action in value.reply.lower() or bool(value.reply)
            return Verdict(passed=named)
        ''',
    "experiments/draft_writers/flows/drafting/flow.py": '''
        from typing import Annotated

        from pydantic import Field

        from aqven.spec import Flow, code, flow, llm
        from spoke.types import Draft, DraftRequest


        def tidy(reply: Annotated[str, Field(description="The draft as written", max_length=800)]) -> Draft:
            return Draft(reply=reply.strip())


        def build() -> Flow:
            write = llm("write", inference="draft", agent="writer",
                        bind={"summary": "$input.summary", "action": "$input.action"},
                        description="Writes the reply with the project's draft inference")
            clean = code("clean", tidy, bind={"reply": "$write.out.reply"}, description="Trims the reply")
            return flow(description="Drafting alone, as a local flow written in Python",
                        input=DraftRequest, output=Draft, returns={"reply": "$clean.out.reply"},
                        nodes=[write, clean])
        ''',
    # --- a grading panel: a local flow with a typed custom join, and a variant's own node -----------
    "datasets/panel_drafts.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Dataset"
        cases:
        - name: "brake_fix"
          inputs: {summary: "A squeaky brake", action: "fix"}
        - name: "refund_gift"
          inputs: {summary: "An unwanted gift", action: "refund"}
        - name: "chain_wear"
          inputs: {summary: "A worn chain", action: "fix"}
        - name: "saddle_advice"
          inputs: {summary: "Which saddle height", action: "advise"}
        - name: "flat_tyre"
          inputs: {summary: "A flat rear tyre", action: "fix"}
        - name: "late_order"
          inputs: {summary: "An order that never came", action: "refund"}
        ''',
    "experiments/brake_panel/experiment.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "How often the graders agree, settled by majority or leniently"
        subject:
          flow: "panel"
        varies:
          what: "use"
          nodes: ["settle"]
        cases:
          dataset: "panel_drafts"
        variants:
        - id: "majority"
        - id: "lenient"
          nodes:
            settle: "lenient"
        checks:
        - id: "agreed"
          kind: "binary"
          run: "@root.experiments.brake_panel.checks:agreed"
        question:
          kind: "look"
        ''',
    "experiments/brake_panel/checks.py": '''
        from aqven.policies import EvalContext, NoParams, Verdict
        from spoke.types import DraftRequest, PanelCall


        def agreed(value: PanelCall, context: EvalContext[DraftRequest, PanelCall], params: NoParams) -> Verdict:
            return Verdict(passed=value.agreed, reason=None if value.agreed else f"split on {context.inputs.summary}")
        ''',
    "experiments/brake_panel/flows/panel/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Three graders judge a draft; the panel settles on a call"
        input: "DraftRequest"
        output: "PanelCall"
        order: ["graders", "settle"]
        returns:
        - name: "verdict"
          from: "$settle.out.verdict"
        - name: "agreed"
          from: "$settle.out.agreed"
        ''',
    "experiments/brake_panel/flows/panel/nodes/graders/graders.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "parallel"
        description: "Three graders call the draft independently"
        body:
          first: "first"
          second: "second"
          third: "third"
        join:
          run: "agreeing"
          with:
            min_agree: 2
        out:
        - name: "grades"
          type: "Grade[]"
          description: "The calls of the graders that answered"
          maxItems: 3
          from: "$ok"
        ''',
    "experiments/brake_panel/flows/panel/nodes/graders/graders.py": '''
        from collections import Counter
        from typing import Annotated

        from pydantic import BaseModel, Field

        from aqven.policies import POLICY_CONFIG, Done, Fail, JoinDecision, JoinState, Wait
        from spoke.types import Grade


        class AgreeParams(BaseModel):
            model_config = POLICY_CONFIG

            min_agree: Annotated[int, Field(ge=1, le=3)]


        def agreeing(state: JoinState[Grade], params: AgreeParams) -> JoinDecision[Grade]:
            votes = Counter(grade.verdict for grade in state.values)
            if max(votes.values(), default=0) >= params.min_agree:
                return Done(state.values)
            if state.pending:
                return Wait()
            return Fail(f"{len(state.values)} graders answered; the panel needs {params.min_agree} who agree")
        ''',
    **{f"experiments/brake_panel/flows/panel/nodes/graders/{who}.node.yaml": f'''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "The {who} grader"
        inference: "grade"
        agent: "{agent}"
        in:
        - name: "summary"
          from: "$input.summary"
        - name: "action"
          from: "$input.action"
        ''' for who, agent in (("first", "expert"), ("second", "writer"), ("third", "expert"))},
    "experiments/brake_panel/flows/panel/nodes/graders/grade.inference.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Inference"
        description: "A grader's call on a draft"
        in:
        - name: "summary"
          type: "Text"
          description: "The ticket in a sentence"
        - name: "action"
          type: "RepairAction"
          description: "What the shop does"
        out:
        - name: "verdict"
          type: "Text"
          description: "Send the draft or hold it"
          maxLength: 40
        - name: "score"
          type: "Score"
          description: "How sure the grader is"
        checks:
        - use: "max_words"
          with:
            field: "$out.verdict"
            max: 5
          on_fail: "retry"
        - run: "confident"
          on_fail: "flag"
        ''',
    "experiments/brake_panel/flows/panel/nodes/graders/grade.prompt.md": "Grade the draft: send it or hold it.\n",
    "experiments/brake_panel/flows/panel/nodes/graders/grade.py": '''
        from aqven.policies import EvalContext, NoParams, Verdict
        from spoke.types import GradeIn, GradeOut


        def confident(value: GradeOut, context: EvalContext[GradeIn, GradeOut], params: NoParams) -> Verdict:
            sure = value.score >= 0.5
            return Verdict(passed=sure, reason=None if sure else f"unsure about {context.inputs.action}")
        ''',
    "experiments/brake_panel/flows/panel/nodes/settle/settle.node.yaml": settling_node(
        "settle", "The call most graders made", "A majority made that call"),
    "experiments/brake_panel/flows/panel/nodes/settle/settle.py": '''
        from spoke.types import BrakePanelPanelSettleOut, Grade


        def settle(grades: list[Grade]) -> BrakePanelPanelSettleOut:
            calls = [grade.verdict for grade in grades]
            top = max(sorted(set(calls)), key=calls.count)
            return BrakePanelPanelSettleOut(verdict=top, agreed=calls.count(top) * 2 > len(calls))
        ''',
    "experiments/brake_panel/nodes/lenient/lenient.node.yaml": settling_node(
        "lenient", "The first grader's call, agreed whatever the others say", "Always true"),
    "experiments/brake_panel/nodes/lenient/lenient.py": '''
        from pydantic import BaseModel

        from aqven.spec import GENERATED_CONFIG
        from spoke.types import BrakePanelLenientOut, Grade


        class Calls(BaseModel):
            """A helper model of the node's own, configured as the generated ones are."""
            model_config = GENERATED_CONFIG

            verdicts: tuple[str, ...]


        def lenient(grades: list[Grade]) -> BrakePanelLenientOut:
            calls = Calls(verdicts=tuple(grade.verdict for grade in grades))
            return BrakePanelLenientOut(verdict=calls.verdicts[0] if calls.verdicts else "hold", agreed=True)
        ''',
}


def write_project(root: Path) -> Path:
    """Write the project into `root` (the module root, holding aqven.yaml) and return it."""
    return write_files(root, FILES)
