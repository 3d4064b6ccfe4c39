"""The mistakes of issue 22 (and the question numbers of issue 20), each made once in a valid project of
ours: the showcase-shaped `lumen` of tests/check/showcase.py or the bicycle desk `spoke` of
tests/compat_project.py. Every row gives exactly the diagnostics listed, at the file:line:col given
(the hint lines are left out here: other tests pin them), and nothing else."""
from __future__ import annotations

import pytest

from pytest_aqven.api.check import check_root
from pytest_aqven.diagnostics import Diagnostic

from ..compat_project import write_project
from ..projects import write_files
from .showcase import Showcase

G = "flows/gather/nodes/"
LOOP = "flows/polish_loop/nodes/improve/improve.node.yaml"
REPAIR = "flows/repair/nodes/"
TRIAGE_PROMPT = REPAIR + "triage/triage.prompt.md"
DATASET = "datasets/support_case_cases.yaml"
RISK = "experiments/reply_overpromise_risk/experiment.yaml"
NONI = "experiments/reply_noninferior_mistral/experiment.yaml"
NEW = None       # an edit whose old text is None writes a new file
ALL = "all"      # an edit with a fourth item ALL replaces every occurrence (else the old text occurs once)

MOOD = '''\
apiVersion: "aqven/v1"
kind: "Type"
type: "enum"
description: "How a message sounds"
values:
- value: "happy"
- value: "sad"
- value: "angry"
'''
CRITIQUE = '''\
apiVersion: "aqven/v1"
kind: "Inference"
description: "How well a reply keeps to the resolution"
in:
- name: "reply"
  type: "Text"
out:
- name: "rationale"
  type: "Text"
- name: "score"
  type: "{score}"
'''
JUDGE_CHECK = '''- id: "critique"
  kind: "continuous"
  inference: "critique"
  agent: "deepseek"
question:'''
TERSE = '''\
apiVersion: "aqven/v1"
kind: "Node"
node: "code"
description: "A reply that only counts the words of the draft"
run: "terse"
in:
- name: "draft"
  from: "$draft.out.reply"
out:
- name: "reply"
  type: "Int"
'''
USE_EXPERIMENT = '''\
apiVersion: "aqven/v1"
kind: "Experiment"
description: "A code node polishes as well as the model, within 5 points"
subject:
  flow: "support_case"
  from: "polish"
  to: "polish"
varies:
  what: "use"
  nodes:
  - "polish"
cases:
  dataset: "support_case_cases"
variants:
- id: "model"
- id: "terse"
  nodes:
    polish: "terse"
question:
  kind: "look"
'''

# (id, project, edits (file, old text, new text), the diagnostics it gives)
MUTATIONS = [
    # --- maps, containers, switches ------------------------------------------------------------
    ("map_out_items_do_not_fit", "lumen", [(G + "each/each.node.yaml", '"$ok[*].label"', '"$ok"')],
     ["flows/gather/nodes/each/each.node.yaml:12:3: error E_BINDING_TYPE out[0].from: node each: out tags: $ok is "
      "a list of the output of node tag, which does not fit Text[] (out tags): its items: a record is not text"]),
    ("map_over_text", "lumen", [(G + "each/each.node.yaml", '"$words.out.items"', '"$words.out.mood"')],
     ["flows/gather/nodes/each/each.node.yaml:5:1: error E_MAP_OVER_NOT_LIST over: node each: over $words.out.mood "
      "is Text, not a list"]),
    ("container_out_record_from_a_list", "lumen",
     [(G + "both/both.node.yaml", '  type: "Text?"\n  from: "$branch.a.text"', '  type: "Draft"\n  from: "$ok"')],
     ["flows/gather/nodes/both/both.node.yaml:18:3: error E_BINDING_TYPE out[1].from: node both: out left: $ok is a "
      "list of the output of a branch of node both, which does not fit Draft (out left): a list of the output of "
      "a branch of node both is a list, but Draft is one value"]),
    ("switch_case_binds_no_out_field", "lumen",
     [(G + "route/route.node.yaml", '    bind:\n    - name: "reply"\n      value: "We are sorry."', "    bind: []")],
     ["flows/gather/nodes/route/route.node.yaml:12:3: error E_BINDING_MISSING cases.sad: node route: case sad binds "
      "no value for out field reply of the switch"]),
    ("switch_case_binds_a_wrong_value", "spoke", [(REPAIR + "route/route.node.yaml", '"advise"', '"adv"')],
     ["flows/repair/nodes/route/route.node.yaml:15:7: error E_BINDING_TYPE cases.question.bind[0].value: node route: "
      "case question: out action: the value 'adv' does not fit RepairAction (action of the switch): input should "
      "be 'fix', 'refund' or 'advise'"]),
    ("switch_on_an_enum_without_a_case", "lumen",
     [("types/enums/mood.yaml", NEW, MOOD), (G + "words/words.node.yaml", '- name: "mood"\n  type: "Text"',
                                            '- name: "mood"\n  type: "Mood"')],
     ["flows/gather/nodes/route/route.node.yaml:6:1: error E_SWITCH_NOT_EXHAUSTIVE cases: node route: on "
      "$words.out.mood is Mood, but no case takes angry, and there is no default case"]),
    ("switch_on_a_union_without_a_case", "spoke",
     [(REPAIR + "route/route.node.yaml", '  question:\n    bind:\n    - name: "action"\n      value: "advise"\n', "")],
     ["flows/repair/nodes/route/route.node.yaml:6:1: error E_SWITCH_NOT_EXHAUSTIVE cases: node route: on "
      "$to_form.out is TicketForm, but no case takes question, and there is no default case"]),
    # --- loops and joins: the built-in policies' parameters --------------------------------------
    ("stagnation_without_path", "lumen", [(LOOP, "select:", '- use: "stagnation"\n  with:\n    window: 1\nselect:')],
     ["flows/polish_loop/nodes/improve/improve.node.yaml:19:3: error E_POLICY_PARAMS stop[1].with: node improve: "
      "stop policy use: stagnation: with parameters are invalid: path: Field required"]),
    ("best_of_a_text", "lumen",
     [(LOOP, '  with:\n    path: "$iter.critique.out.score"\nout', '  with:\n    path: "$iter.revise.out.reply"\nout')],
     ["flows/polish_loop/nodes/improve/improve.node.yaml:21:5: error E_POLICY_PARAMS select.with.path: node improve: "
      "select policy use: best: path $iter.revise.out.reply is Text, not a number"]),
    ("quorum_above_the_branches", "lumen", [(G + "both/both.node.yaml", "min_ok: 1", "min_ok: 3")],
     ["flows/gather/nodes/both/both.node.yaml:11:5: error E_POLICY_PARAMS join.with.min_ok: node both: join policy "
      "use: quorum: min_ok is 3, but the node has 2 branches, so the join always fails"]),
    ("loop_init_of_another_type", "lumen", [(LOOP, 'from: "$input.message"', 'from: "$input"')],
     ["flows/polish_loop/nodes/improve/improve.node.yaml:11:5: error E_BINDING_TYPE init.revise[0].from: node "
      "improve: init revise: input previous: $input is DraftRequest, which does not fit Text? (previous of "
      "inference revise): a record is not text"]),
    # --- inputs of every node kind ---------------------------------------------------------------
    ("llm_input_of_another_enum", "spoke", [(REPAIR + "draft/draft.node.yaml", '"$route.out.action"', '"$input.channel"')],
     ["flows/repair/nodes/draft/draft.node.yaml:10:3: error E_BINDING_TYPE in[1].from: node draft: input action: "
      "$input.channel is Channel, which does not fit RepairAction (action of inference draft): RepairAction has no "
      "value web, phone of Channel (its values: fix, refund, advise)"]),
    ("call_input_of_another_type", "lumen",
     [("flows/support_case/nodes/draft/draft.node.yaml", '"$resolve.out.resolution"', '"$prepare.out"')],
     ["flows/support_case/nodes/draft/draft.node.yaml:10:3: error E_BINDING_TYPE in[1].from: node draft: input "
      "resolution: $prepare.out is the output of node prepare, which does not fit Text (resolution of the input "
      "DraftRequest of flow draft_reply): a record is not text"]),
    ("tool_input_of_another_type", "spoke",
     [(REPAIR + "lookup/lookup.node.yaml", '"$triage.out.part_id"', '"$prepare.out.parts"')],
     ["flows/repair/nodes/lookup/lookup.node.yaml:8:3: error E_BINDING_TYPE in[0].from: node lookup: input part_id: "
      "$prepare.out.parts is Part[], which does not fit PartId (part_id of tool lookup_part): Part[] is a list, but "
      "PartId is one value"]),
    ("human_input_of_another_type", "spoke", [(REPAIR + "approve/approve.node.yaml", '"$draft.out.reply"', '"$draft.out"')],
     ["flows/repair/nodes/approve/approve.node.yaml:16:3: error E_BINDING_TYPE in[0].from: node approve: input "
      "reply: $draft.out is the output of node draft, which does not fit Text (reply of node approve): a record is "
      "not text"]),
    ("human_default_that_is_no_form", "spoke",
     [(REPAIR + "approve/approve.node.yaml", '  policy: "escalate"\n  assignee: "shop_owner"\n  timeout_seconds: 7200',
       '  policy: "default"\n  value:\n    note: "nobody answered"')],
     ["flows/repair/nodes/approve/approve.node.yaml:10:3: error E_HUMAN_DEFAULT_INVALID on_timeout.value: node "
      "approve: on_timeout default value does not fit the form Approval: approved: field required"]),
    ("narrow_of_a_text", "spoke", [(REPAIR + "to_form/to_form.node.yaml", '"$triage.out.form"', '"$triage.out.summary"')],
     ["flows/repair/nodes/to_form/to_form.node.yaml:5:1: error E_BINDING_TYPE from: node to_form: from: "
      "$triage.out.summary is Text, which does not fit TicketForm (type TicketForm): text is not a union value"]),
    ("returns_a_record_as_text", "lumen", [("flows/support_case/flow.yaml", '"$polish.out.reply"', '"$polish.out"')],
     ["flows/support_case/flow.yaml:13:3: error E_BINDING_TYPE returns[0].from: flow support_case: returns reply: "
      "$polish.out is the output of node polish, which does not fit Text (field reply of its output type "
      "CaseOutcome): a record is not text"]),
    ("code_returns_another_model", "spoke", [(REPAIR + "finish/finish.py", "-> RepairFinishOut:", "-> Approval:")],
     ["flows/repair/nodes/finish/finish.node.yaml:5:1: error E_CODE_SIGNATURE_MISMATCH run: node finish: finish "
      "returns Approval, which does not fit the out fields of node finish: Approval has no field reply, action of "
      "the out fields of node finish"]),
    ("flow_py_returns_a_record_as_text", "spoke",
     [("experiments/draft_writers/flows/drafting/flow.py", '{"reply": "$clean.out.reply"}', '{"reply": "$clean.out"}')],
     ["experiments/draft_writers/flows/drafting/flow.py: error E_BINDING_TYPE returns[0].from: flow drafting: "
      "returns reply: $clean.out is the output of node clean, which does not fit Text (field reply of its output "
      "type Draft): a record is not text"]),
    ("use_alternative_of_another_type", "lumen",
     [("experiments/polish_alt/experiment.yaml", NEW, USE_EXPERIMENT),
      ("experiments/polish_alt/nodes/terse/terse.node.yaml", NEW, TERSE),
      ("experiments/polish_alt/nodes/terse/terse.py", NEW, "def terse(draft):\n    return {'reply': len(draft.split())}\n")],
     ["experiments/polish_alt/experiment.yaml:18:5: error E_BINDING_TYPE variants[1].nodes.polish: variant terse: "
      "flows/support_case/flow.yaml:13:3: flow support_case: returns reply: $polish.out.reply is Int, which does "
      "not fit Text (field reply of its output type CaseOutcome): a whole number is not text"]),
    # --- Liquid prompts ------------------------------------------------------------------------
    ("prompt_includes_a_missing_fragment", "spoke",
     [(TRIAGE_PROMPT, "{{ variants.tone }}", '{{ variants.tone }} {% include "fragments/house_rules" %}')],
     ["flows/repair/nodes/triage/triage.prompt.md:1:74: error E_FRAGMENT_MISSING: prompt of inference triage: "
      "include fragments/house_rules: the project has no file fragments/house_rules.md"]),
    ("prompt_reads_no_input", "spoke", [(TRIAGE_PROMPT, "{{ variants.tone }}", "{{ variants.tone }} {{ mesage }}")],
     ["flows/repair/nodes/triage/triage.prompt.md:1:66: error E_PROMPT_VARIABLE_UNDECLARED: prompt of inference "
      "triage: variable mesage is not an input of the inference"]),
    ("prompt_without_output_format", "spoke", [(TRIAGE_PROMPT, "{{ output_format }}\n", "")],
     ["flows/repair/nodes/triage/triage.prompt.md:1:1: warning W_PROMPT_OUTPUT_FORMAT: prompt of inference triage: "
      "a Liquid prompt without {{ output_format }}, and the text never names the output fields summary, action, "
      "part_id: the model never sees them"]),
    ("prompt_text_outside_messages", "spoke",
     [(TRIAGE_PROMPT, "{{ output_format }}\n", "{% message user %}{{ output_format }}{% endmessage %}\n")],
     ["flows/repair/nodes/triage/triage.prompt.md:1:1: error E_PROMPT_MESSAGES: prompt of inference triage: text "
      "'Read the repair ticket and ...' is outside the {% message %} blocks",
      "flows/repair/nodes/triage/triage.prompt.md:1:43: error E_PROMPT_MESSAGES: prompt of inference triage: an "
      "output {{ ... }} is outside the {% message %} blocks"]),
    ("prompt_ends_with_the_assistant", "spoke",
     [(TRIAGE_PROMPT, "Read the repair ticket and fill the form. {{ variants.tone }}\n{{ output_format }}\n",
       "{% message user %}Read. {{ variants.tone }} {{ output_format }}{% endmessage %}\n"
       "{% message assistant %}Fine.{% endmessage %}\n")],
     ["flows/repair/nodes/triage/triage.prompt.md:2:4: error E_PROMPT_MESSAGES: prompt of inference triage: the "
      "prompt ends with an assistant message, but the last message of a prompt is the user's"]),
    ("prompt_message_inside_a_message", "spoke",
     [(TRIAGE_PROMPT, "Read the repair ticket and fill the form. {{ variants.tone }}\n{{ output_format }}\n",
       "{% message user %}Read. {% message user %}{{ output_format }}{% endmessage %}{% endmessage %}\n")],
     ["flows/repair/nodes/triage/triage.prompt.md:1:28: error E_PROMPT_MESSAGE_NESTED: prompt of inference triage: "
      "a {% message %} block is inside another one"]),
    ("prompt_that_does_not_parse", "spoke", [(TRIAGE_PROMPT, "{{ variants.tone }}", "{% if %}")],
     ["flows/repair/nodes/triage/triage.prompt.md:1:46: error E_PROMPT_SYNTAX: prompt of inference triage: the "
      "template does not parse: missing expression"]),
    ("variant_text_reads_no_input", "spoke",
     [(REPAIR + "triage/triage.variants/tone/spoken.md", "filler words.", "filler words about {{ summary }}.")],
     ["flows/repair/nodes/triage/triage.variants/tone/spoken.md:1:61: error E_PROMPT_VARIABLE_UNDECLARED: variant "
      "text of inference triage: variable summary is not an input of the inference"]),
    ("inference_check_params", "spoke",
     [(REPAIR + "triage/triage.inference.yaml", '    field: "$out.summary"', '    fields: "$out.summary"')],
     ["flows/repair/nodes/triage/triage.inference.yaml:66:3: error E_CHECK_PARAMS checks[0].with: inference "
      "triage: evaluator use: not_empty: with parameters are invalid: field: field required"]),
    # --- judges, secrets ------------------------------------------------------------------------
    ("judge_score_typed_text", "lumen",
     [("flows/support_case/nodes/polish/critique.inference.yaml", NEW, CRITIQUE.format(score="Text")),
      ("flows/support_case/nodes/polish/critique.prompt.md", NEW, "Score how well the reply keeps to the resolution.\n"),
      (NONI, "question:", JUDGE_CHECK)],
     ["experiments/reply_noninferior_mistral/experiment.yaml:32:3: error E_JUDGE_SCORE checks[2].inference: "
      "experiment reply_noninferior_mistral: check critique: judge critique: its output field score is Text, not a "
      "number, so every attempt it scores is an error"]),
    ("api_key_in_aqven_yaml", "lumen",
     [("aqven.yaml", '  kind: "code"\n', '  kind: "code"\n  api_key: "sk-or-v1-0123456789abcdef0123456789abcdef"\n')],
     ["aqven.yaml:8:3: error E_SECRET_LITERAL providers[0].api_key: project: api_key is written as a literal, not as "
      "ref:env/<NAME> (the value is not repeated here)"]),
    ("api_key_in_an_agent", "lumen",
     [("agents/gpt.yaml", "output:", "settings:\n  provider_options:\n    x_api_key: \"abc123secret\"\noutput:")],
     ["agents/gpt.yaml:7:5: error E_SECRET_LITERAL settings.provider_options.x_api_key: agent gpt: x_api_key is "
      "written as a literal, not as ref:env/<NAME> (the value is not repeated here)"]),
    # --- each diagnostic once --------------------------------------------------------------------
    ("one_wrong_dataset_value", "lumen",
     [(DATASET, '- name: "parcel_missing"\n  inputs:\n    customer:\n      name: "Ada"',
       '- name: "parcel_missing"\n  inputs:\n    customer:\n      name: 7')],
     ["datasets/support_case_cases.yaml:46:7: error E_CASE_INPUTS_INVALID cases[2].inputs.customer.name: experiments "
      "reply_noninferior_mistral, reply_overpromise_risk: case parcel_missing: inputs do not fit the input "
      "CaseRequest of flow support_case (a range subject reads the fields it is given): customer.name: input "
      "should be a valid string"]),
    ("one_renamed_key_in_every_case", "lumen", [(DATASET, '    message: "My problem', '    msg: "My problem', ALL)],
     ["datasets/support_case_cases.yaml:10:5: error E_CASE_INPUTS_INVALID cases[0].inputs.msg: experiments "
      "reply_look, reply_noninferior_mistral, reply_overpromise_risk: case refund_late: inputs do not fit the input "
      "CaseRequest of flow support_case (a range subject reads the fields it is given): msg: extra inputs are not "
      "permitted (and 13 more cases)"]),
    ("one_alternative_in_two_variants", "lumen",
     [("experiments/polish_alt/experiment.yaml", NEW,
       USE_EXPERIMENT.replace('    polish: "terse"\n', '    polish: "terse"\n- id: "terse_again"\n  nodes:\n    polish: "terse"\n')),
      ("experiments/polish_alt/nodes/terse/terse.node.yaml", NEW, TERSE),
      ("experiments/polish_alt/nodes/terse/terse.py", NEW, "def terse(draft):\n    return {'reply': len(draft.split())}\n")],
     ["experiments/polish_alt/experiment.yaml:18:5: error E_BINDING_TYPE variants[1].nodes.polish: variant terse: "
      "flows/support_case/flow.yaml:13:3: flow support_case: returns reply: $polish.out.reply is Int, which does "
      "not fit Text (field reply of its output type CaseOutcome): a whole number is not text (and variant "
      "terse_again)",
      "experiments/polish_alt/experiment.yaml:19:3: warning W_VARIANT_DUPLICATE variants[2].id: experiment "
      "polish_alt: variant terse_again sets the same values as variant terse"]),
    ("range_fixture_of_another_type", "lumen",
     [(DATASET, '    prepare:\n      text: "my problem: parcel missing"', '    prepare:\n      text: ["my problem: parcel missing"]')],
     ["datasets/support_case_cases.yaml:51:7: error E_RANGE_FIXTURE_INVALID cases[2].node_outputs.prepare.text: "
      "experiments reply_noninferior_mistral, reply_overpromise_risk: case parcel_missing: node_outputs.prepare does "
      "not fit the output of node prepare, which the range reads in its place: text: input should be a valid string"]),
    # --- the numbers of a question (issue 20) ----------------------------------------------------
    ("threshold_above_nan", "lumen", [(RISK, "above: 0.97", "above: .nan")],
     ["experiments/reply_overpromise_risk/experiment.yaml:26:3: error E_SPEC_INVALID question.above: experiment "
      "reply_overpromise_risk: input should be a finite number"]),
    ("threshold_above_a_rate", "lumen", [(RISK, "above: 0.97", "above: 1.2")],
     ["experiments/reply_overpromise_risk/experiment.yaml:26:3: error E_QUESTION_RANGE question.above: experiment "
      "reply_overpromise_risk: question threshold: promises is a rate between 0 and 1, so above 1.2 is out of its "
      "range"]),
    ("threshold_edge_past_one", "lumen", [(RISK, "above: 0.97", "above: 0.995")],
     ["experiments/reply_overpromise_risk/experiment.yaml:26:3: error E_QUESTION_RANGE question.above: experiment "
      "reply_overpromise_risk: question threshold: confirming needs the lower 95% bound of promises above 0.995 + "
      "0.01 = 1.005, which no rate reaches (a rate is at most 1)"]),
    ("noninferior_margin_past_a_rate", "lumen", [(NONI, "margin: 0.05", "margin: 1.5")],
     ["experiments/reply_noninferior_mistral/experiment.yaml:35:3: error E_QUESTION_RANGE question.margin: "
      "experiment reply_noninferior_mistral: question noninferior: margin 1.5 on promises, a rate, whose "
      "differences lie between -1 and 1: the question can never be refuted"]),
    ("guardrail_margin_infinite", "lumen", [(NONI, "margin: 0.2", "margin: .inf")],
     ["experiments/reply_noninferior_mistral/experiment.yaml:39:5: error E_SPEC_INVALID "
      "question.guardrails[0].margin: experiment reply_noninferior_mistral: input should be a finite number"]),
]


def project(kind: str, root):
    return Showcase(root).root if kind == "lumen" else write_project(root)


def apply(root, edits) -> None:
    for rel, old, new, *every in edits:
        path = root / rel
        if old is None:
            write_files(root, {rel: new})
            continue
        text = path.read_text(encoding="utf-8")
        assert text.count(old) > 1 if every else text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
        path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize("name,kind,edits,expected", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutation_gives_its_diagnostic(tmp_path, name, kind, edits, expected):
    root = project(kind, tmp_path / kind)
    apply(root, edits)
    found = sorted(check_root(root), key=Diagnostic.sort_key)
    assert [d.render().split("\n  hint: ")[0] for d in found] == expected


def test_a_judge_with_a_numeric_score_is_valid(tmp_path):
    root = project("lumen", tmp_path / "lumen")
    apply(root, [("flows/support_case/nodes/polish/critique.inference.yaml", NEW, CRITIQUE.format(score="Score")),
                 ("flows/support_case/nodes/polish/critique.prompt.md", NEW, "Score the reply.\n"),
                 (NONI, "question:", JUDGE_CHECK)])
    assert check_root(root) == []


def collection_lines(root) -> dict[str, list[str]]:
    """experiment id -> the first lines of the errors its pytest collection shows."""
    from pytest_aqven.api.check import check_project
    from pytest_aqven.check.scope import collection_errors
    from pytest_aqven.project.loader import load_project

    project = load_project(root)
    project_level, own = check_project(project)
    return {eid: [d.render().split("\n")[0] for d in collection_errors(project, exp, project_level, own[eid])]
            for eid, exp in project.experiments.items()}


def test_a_judges_prompt_stops_the_experiments_that_use_the_judge(tmp_path):
    root = project("lumen", tmp_path / "lumen")
    apply(root, [("flows/judges/critique.inference.yaml", NEW, CRITIQUE.format(score="Score")),   # in no flow
                 ("flows/judges/critique.prompt.md", NEW, "Score {{ replay }}.\n{{ output_format }}\n"),
                 (NONI, "question:", JUDGE_CHECK)])
    line = ("flows/judges/critique.prompt.md:1:10: error E_PROMPT_VARIABLE_UNDECLARED: prompt of inference critique: "
            "variable replay is not an input of the inference")
    errors = collection_lines(root)
    assert errors["reply_noninferior_mistral"] == [line]
    assert errors["reply_look"] == errors["reply_overpromise_risk"] == []


def test_a_shared_case_problem_is_one_line_in_every_experiment_it_stops(tmp_path):
    root = project("lumen", tmp_path / "lumen")
    apply(root, [(DATASET, '- name: "parcel_missing"\n  inputs:\n    customer:\n      name: "Ada"',
                  '- name: "parcel_missing"\n  inputs:\n    customer:\n      name: 7')])
    errors = collection_lines(root)
    line = next(m[3][0] for m in MUTATIONS if m[0] == "one_wrong_dataset_value")
    assert errors["reply_noninferior_mistral"] == errors["reply_overpromise_risk"] == [line]
    assert errors["reply_look"] == []                 # parcel_missing is no regression: reply_look does not select it
