"""One failing fixture per code of the seed's table "What aqven check catches": each test breaks one
thing in the valid showcase and asserts the whole diagnostic (position, key path, message, hint) and
that nothing else is reported."""
from .showcase import FILES

LOOK = "experiments/reply_look/experiment.yaml"
RISK = "experiments/reply_overpromise_risk/experiment.yaml"
NONI = "experiments/reply_noninferior_mistral/experiment.yaml"
NONI_DIR = "experiments/reply_noninferior_mistral"
VARIES_AGENT = 'varies:\n  what: "agent"\n  nodes:\n  - "polish"\n'


def node_file(kind: str, extra: str) -> str:
    return f'apiVersion: "aqven/v1"\nkind: "Node"\nnode: "{kind}"\ndescription: "An alternative"\n{extra}'


def test_flow_unknown_subject(showcase):
    showcase.edit(LOOK, 'flow: "support_case"', 'flow: "support_cse"')
    assert showcase.one("E_FLOW_UNKNOWN") == (
        "experiments/reply_look/experiment.yaml:5:3: error E_FLOW_UNKNOWN subject.flow: experiment reply_look: "
        "flow support_cse is neither a flow of experiments/reply_look/flows nor a flow of the project\n"
        "  hint: name a flow of the project (draft_reply, gather, polish_loop, support_case) or add "
        "experiments/reply_look/flows/support_cse/flow.yaml")


def test_flow_unknown_flow_value(showcase):
    showcase.edit(NONI, 'what: "agent"', 'what: "flow"')
    showcase.edit(NONI, '  - "polish"\n', '  - "draft"\n')
    showcase.edit(NONI, 'polish: "mistral"', 'draft: "short_draft"')
    showcase.edit(NONI, 'from: "polish"', 'from: "draft"')
    assert showcase.one("E_FLOW_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_FLOW_UNKNOWN variants[1].nodes.draft: "
        "experiment reply_noninferior_mistral: variant mistral: flow short_draft is neither a flow of "
        "experiments/reply_noninferior_mistral/flows nor a flow of the project\n"
        "  hint: name a flow of the project (draft_reply, gather, polish_loop, support_case) or add "
        "experiments/reply_noninferior_mistral/flows/short_draft/flow.yaml")


def test_range_node_not_top_level(showcase):
    showcase.edit(LOOK, 'from: "polish"', 'from: "polsh"')
    assert showcase.one("E_RANGE_INVALID") == (
        "experiments/reply_look/experiment.yaml:6:3: error E_RANGE_INVALID subject.from: experiment reply_look: "
        "range node polsh is not a top-level node of support_case\n"
        "  hint: set from to a node of the order (prepare, resolve, draft, polish); a nested node runs inside its container")


def test_range_reversed(showcase):
    showcase.edit(LOOK, 'to: "polish"', 'to: "prepare"')
    assert showcase.one("E_RANGE_INVALID") == (
        "experiments/reply_look/experiment.yaml:6:3: error E_RANGE_INVALID subject.from: experiment reply_look: "
        "range from polish comes after to prepare in the order of support_case\n"
        "  hint: swap from and to")


def test_dataset_unknown(showcase):
    showcase.edit(LOOK, 'dataset: "support_case_cases"', 'dataset: "support_cases"')
    assert showcase.one("E_DATASET_UNKNOWN") == (
        "experiments/reply_look/experiment.yaml:9:3: error E_DATASET_UNKNOWN cases.dataset: experiment reply_look: "
        "dataset support_cases does not exist in the project\n"
        "  hint: name a dataset of datasets/ (support_case_cases)")


def test_dataset_of_another_flow(showcase):
    showcase.write("datasets/drafts.yaml", 'apiVersion: "aqven/v1"\nkind: "Dataset"\nflow: "draft_reply"\ncases:\n'
                   '- name: "a"\n  inputs:\n    message: "m"\n    resolution: "r"\n  tags:\n    regression: "yes"\n')
    showcase.edit(LOOK, 'dataset: "support_case_cases"', 'dataset: "drafts"')
    assert showcase.one("E_DATASET_MISMATCH") == (
        "experiments/reply_look/experiment.yaml:9:3: error E_DATASET_MISMATCH cases.dataset: experiment reply_look: "
        "dataset drafts belongs to flow draft_reply, but the subject is flow support_case\n"
        "  hint: pick a dataset with flow: support_case; only a local flow of the experiment runs a dataset without flow")


def test_dataset_types_differ_from_a_local_subject(showcase):
    showcase.write("experiments/reply_look/flows/short_reply/flow.yaml", FILES["flows/draft_reply/flow.yaml"])
    showcase.write("experiments/reply_look/flows/short_reply/nodes/write/write.node.yaml",
                   FILES["flows/draft_reply/nodes/write/write.node.yaml"])
    showcase.edit(LOOK, '  flow: "support_case"\n  from: "polish"\n  to: "polish"\n', '  flow: "short_reply"\n')
    assert showcase.one("E_DATASET_MISMATCH") == (
        "experiments/reply_look/experiment.yaml:7:3: error E_DATASET_MISMATCH cases.dataset: experiment reply_look: "
        "dataset support_case_cases belongs to flow support_case, whose input type CaseRequest differs from input "
        "type DraftRequest of local flow short_reply\n"
        "  hint: give local flow short_reply the input and output types of flow support_case, or pick a dataset "
        "without flow")


def test_factor_missing(showcase):
    showcase.edit(NONI, VARIES_AGENT, "")
    assert showcase.one("E_FACTOR_MISSING") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:14:3: error E_FACTOR_MISSING variants[1].nodes: "
        "experiment reply_noninferior_mistral: variant mistral sets polish, but the experiment declares no varies\n"
        "  hint: declare varies with what (agent, prompt, use or flow) and the nodes it changes; each variant sets "
        "values of that factor under nodes")


def test_a_and_a_experiment_needs_no_factor_and_gets_no_duplicate_warning(showcase):
    showcase.edit(NONI, VARIES_AGENT, "")
    showcase.edit(NONI, '  nodes:\n    polish: "mistral"\n', "")
    assert showcase.text() == "errors: 0, warnings: 0"


def test_factor_node_unknown(showcase):
    showcase.edit(NONI, '  - "polish"\n', '  - "polsh"\n')
    showcase.edit(NONI, 'polish: "mistral"', 'polsh: "mistral"')
    assert showcase.one("E_FACTOR_NODE_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:12:5: error E_FACTOR_NODE_UNKNOWN varies.nodes[0]: "
        "experiment reply_noninferior_mistral: varies.nodes names polsh, which is not a node of flow support_case\n"
        "  hint: name nodes of support_case (polish)")


def test_factor_node_outside_the_range(showcase):
    showcase.edit(NONI, '  - "polish"\n', '  - "resolve"\n')
    showcase.edit(NONI, 'polish: "mistral"', 'resolve: "mistral"')
    assert showcase.one("E_FACTOR_NODE_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:12:5: error E_FACTOR_NODE_UNKNOWN varies.nodes[0]: "
        "experiment reply_noninferior_mistral: varies.nodes names resolve, which lies outside the range "
        "polish..polish of flow support_case\n"
        "  hint: name nodes inside the range (polish) or widen from and to")


def test_factor_kind(showcase):
    showcase.edit(NONI, '  - "polish"\n', '  - "draft"\n')
    showcase.edit(NONI, 'polish: "mistral"', 'draft: "mistral"')
    showcase.edit(NONI, 'from: "polish"', 'from: "draft"')
    assert showcase.one("E_FACTOR_KIND") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:12:5: error E_FACTOR_KIND varies.nodes[0]: "
        "experiment reply_noninferior_mistral: varies.what agent changes llm nodes, but draft is a call node\n"
        "  hint: name llm nodes of support_case (polish) or pick another varies.what")


def test_variant_outside_factor(showcase):
    showcase.edit(NONI, '    polish: "mistral"\n', '    polish: "mistral"\n    resolve: "gpt"\n')
    assert showcase.one("E_VARIANT_OUTSIDE_FACTOR") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:20:5: error E_VARIANT_OUTSIDE_FACTOR "
        "variants[1].nodes.resolve: experiment reply_noninferior_mistral: variant mistral sets resolve, which is not "
        "in varies.nodes (polish)\n"
        "  hint: add resolve to varies.nodes or remove it from the variant: the variants of an experiment change one "
        "factor on the nodes it declares")


def test_alternative_unknown(showcase):
    showcase.edit(NONI, 'what: "agent"', 'what: "use"')
    showcase.edit(NONI, 'polish: "mistral"', 'polish: "short_polish"')
    assert showcase.one("E_ALTERNATIVE_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_ALTERNATIVE_UNKNOWN "
        "variants[1].nodes.polish: experiment reply_noninferior_mistral: variant mistral puts alternative "
        "short_polish at polish, but experiments/reply_noninferior_mistral/nodes has no such node; its alternatives: none\n"
        "  hint: create experiments/reply_noninferior_mistral/nodes/short_polish.node.yaml or name an existing alternative")


def test_alternative_id_taken(showcase):
    showcase.write("experiments/reply_look/nodes/resolve/resolve.node.yaml", node_file(
        "code", 'run: "@root.code.support_case:reply_keeps_resolution"\nout:\n- name: "resolution"\n  type: "Text"\n'))
    assert showcase.only("E_ALTERNATIVE_ID_TAKEN", "W_ALTERNATIVE_UNUSED")[1] == (
        "experiments/reply_look/nodes/resolve/resolve.node.yaml:1:1: error E_ALTERNATIVE_ID_TAKEN: experiment "
        "reply_look: alternative resolve has the id of a node of support_case\n"
        "  hint: rename the alternative file: an alternative runs under the id of its slot, and its own id must not "
        "shadow a node of the subject")


def test_prompt_missing(showcase):
    showcase.edit(NONI, 'what: "agent"', 'what: "prompt"')
    showcase.edit(NONI, 'polish: "mistral"', 'polish: "warmer"')
    assert showcase.one("E_PROMPT_MISSING") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_PROMPT_MISSING variants[1].nodes.polish: "
        "experiment reply_noninferior_mistral: variant mistral puts prompt warmer at polish, but "
        "experiments/reply_noninferior_mistral/prompts has no file warmer.md; its prompts: none\n"
        "  hint: create experiments/reply_noninferior_mistral/prompts/warmer.md or name an existing prompt")


def test_a_prompt_factor_that_fits_is_clean(showcase):
    showcase.edit(NONI, 'what: "agent"', 'what: "prompt"')
    showcase.edit(NONI, 'polish: "mistral"', 'polish: "warmer"')
    showcase.write(f"{NONI_DIR}/prompts/warmer.md", "Rewrite the draft warmly.\n")
    assert showcase.text() == "errors: 0, warnings: 0"


def flow_factor(showcase, output_type: str) -> None:
    showcase.edit(NONI, 'what: "agent"', 'what: "flow"')
    showcase.edit(NONI, '  - "polish"\n', '  - "draft"\n')
    showcase.edit(NONI, 'polish: "mistral"', 'draft: "short_draft"')
    showcase.edit(NONI, 'from: "polish"', 'from: "draft"')
    showcase.write("types/records/short_draft.yaml", FILES["types/records/draft.yaml"])
    showcase.write(f"{NONI_DIR}/flows/short_draft/flow.yaml",
                   FILES["flows/draft_reply/flow.yaml"].replace('output: "Draft"', f'output: "{output_type}"'))
    showcase.write(f"{NONI_DIR}/flows/short_draft/nodes/write/write.node.yaml",
                   FILES["flows/draft_reply/nodes/write/write.node.yaml"])


def test_factor_flow_contract(showcase):
    flow_factor(showcase, "ShortDraft")
    assert showcase.one("E_FACTOR_FLOW_CONTRACT") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_FACTOR_FLOW_CONTRACT "
        "variants[1].nodes.draft: experiment reply_noninferior_mistral: variant mistral calls flow short_draft at "
        "draft, whose output ShortDraft differs from output Draft of flow draft_reply\n"
        "  hint: give flow short_draft the output type of flow draft_reply: every variant runs the same cases and checks")


def test_a_flow_factor_that_fits_is_clean(showcase):
    flow_factor(showcase, "Draft")
    assert showcase.text() == "errors: 0, warnings: 0"


def test_variant_duplicate(showcase):
    showcase.edit(NONI, '- id: "mistral"\n  nodes:\n    polish: "mistral"\n',
                  '- id: "mistral"\n  nodes:\n    polish: "mistral"\n- id: "mistral_again"\n  nodes:\n    polish: "mistral"\n')
    assert showcase.one("W_VARIANT_DUPLICATE") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:20:3: warning W_VARIANT_DUPLICATE variants[2].id: "
        "experiment reply_noninferior_mistral: variant mistral_again sets the same values as variant mistral\n"
        "  hint: change the values of one of them or remove it; to measure noise on purpose, leave every variant as written")


def test_alternative_unused(showcase):
    showcase.write("experiments/reply_look/prompts/warmer.md", "Be warm.\n")
    assert showcase.one("W_ALTERNATIVE_UNUSED") == (
        "experiments/reply_look/experiment.yaml:12:1: warning W_ALTERNATIVE_UNUSED variants: experiment reply_look: "
        "prompt warmer is used by no variant\n"
        "  hint: name it in variants[].nodes or delete experiments/reply_look/prompts/warmer.md")


def test_local_flow_called_by_the_subject_is_used(showcase):
    """A local subject whose call node calls another local flow as written: only a third, unused one warns."""
    for name in ("short_reply", "unused_reply"):
        showcase.write(f"experiments/reply_look/flows/{name}/flow.yaml", FILES["flows/draft_reply/flow.yaml"])
        showcase.write(f"experiments/reply_look/flows/{name}/nodes/write/write.node.yaml",
                       FILES["flows/draft_reply/nodes/write/write.node.yaml"])
    showcase.write("experiments/reply_look/flows/wrapper/flow.yaml",
                   FILES["flows/draft_reply/flow.yaml"].replace("write", "inner"))
    showcase.write("experiments/reply_look/flows/wrapper/nodes/inner/inner.node.yaml",
                   node_file("call", 'flow: "short_reply"\nin:\n- name: "message"\n  from: "$input.message"\n'
                                     '- name: "resolution"\n  from: "$input.resolution"\n'))
    showcase.write("datasets/draft_cases.yaml", 'apiVersion: "aqven/v1"\nkind: "Dataset"\ncases:\n'
                   '- name: "a"\n  inputs:\n    message: "m"\n    resolution: "r"\n  tags:\n    regression: "yes"\n')
    showcase.edit(LOOK, '  flow: "support_case"\n  from: "polish"\n  to: "polish"\n', '  flow: "wrapper"\n')
    showcase.edit(LOOK, 'dataset: "support_case_cases"', 'dataset: "draft_cases"')
    assert showcase.one("W_ALTERNATIVE_UNUSED") == (
        "experiments/reply_look/experiment.yaml:10:1: warning W_ALTERNATIVE_UNUSED variants: experiment reply_look: "
        "local flow unused_reply is used by no variant\n"
        "  hint: name it in variants[].nodes or delete experiments/reply_look/flows/unused_reply")


def test_orphan_flow_of_an_older_layout(showcase):
    showcase.write("experiments/reply_look/arms/one_step/flow.yaml", FILES["flows/draft_reply/flow.yaml"])
    assert showcase.one("E_ORPHAN_FILE") == (
        "experiments/reply_look/arms/one_step/flow.yaml: error E_ORPHAN_FILE: experiment reply_look: "
        "arms/one_step/flow.yaml is a flow outside flows/ and nodes/, so nothing runs it\n"
        "  hint: move it to experiments/reply_look/flows/<flow_id>/ (a local flow) or "
        "experiments/reply_look/nodes/<alt>/ (an alternative), or delete it if it is left from an older layout "
        "such as arms/")


def test_unknown_key_of_an_older_layout(showcase):
    showcase.edit(NONI, '  nodes:\n    polish: "mistral"\n', '  agents:\n    polish: "mistral"\n')
    assert showcase.one("E_UNKNOWN_KEY") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:18:3: error E_UNKNOWN_KEY variants[1].agents: "
        "experiment reply_noninferior_mistral: key agents is not allowed here\n"
        "  hint: allowed keys: id, nodes")


def test_plan_exceeds_cases(showcase):
    showcase.edit(LOOK, "question:", "plan:\n  cases: 20\nquestion:")
    assert showcase.one("W_PLAN_EXCEEDS_CASES") == (
        "experiments/reply_look/experiment.yaml:15:3: warning W_PLAN_EXCEEDS_CASES plan.cases: experiment reply_look: "
        "plan.cases is 20, but dataset support_case_cases has 5 selected cases\n"
        "  hint: add cases to the dataset or lower plan.cases: a series runs each selected case at most once per repeat")


def test_expected_missing(showcase):
    showcase.edit("datasets/support_case_cases.yaml",
                  '  expected_output:\n    reply: "We will help with refund late."\n', "")
    assert showcase.one("E_EXPECTED_MISSING") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:26:3: error E_EXPECTED_MISSING checks[1].use: "
        "experiment reply_noninferior_mistral: check reply uses the built-in expected, but in case refund_late "
        "there is no expected_output\n"
        "  hint: add expected_output to case refund_late of dataset support_case_cases, or narrow cases.tags to "
        "cases that carry it")


def test_expected_missing_a_compared_field(showcase):
    showcase.edit(NONI, '    - "reply"\n', '    - "tone"\n')
    assert showcase.one("E_EXPECTED_MISSING") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:26:3: error E_EXPECTED_MISSING checks[1].use: "
        "experiment reply_noninferior_mistral: check reply uses the built-in expected, but in case refund_late "
        "expected_output lacks the fields tone (and 13 more selected cases)\n"
        "  hint: add the fields tone under expected_output to case refund_late of dataset support_case_cases, or "
        "narrow cases.tags to cases that carry it")


def test_agent_unknown_value(showcase):
    showcase.edit(NONI, 'polish: "mistral"', 'polish: "mistrl"')
    assert showcase.one("E_AGENT_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_AGENT_UNKNOWN variants[1].nodes.polish: "
        "experiment reply_noninferior_mistral: variant mistral puts agent mistrl at polish, which does not exist in "
        "the project\n"
        "  hint: name an agent of agents/ (deepseek, gpt, mistral)")


def test_variant_invalid_undeclared(showcase):
    showcase.edit(RISK, "above: 0.97", 'variant: "gtp"\n  above: 0.97')
    assert showcase.one("E_VARIANT_INVALID") == (
        "experiments/reply_overpromise_risk/experiment.yaml:26:3: error E_VARIANT_INVALID question.variant: "
        "experiment reply_overpromise_risk: question names variant gtp, which is not declared under variants\n"
        "  hint: declare it or name one of: gpt")


def test_variant_invalid_comparison_of_one(showcase):
    showcase.edit(NONI, '- id: "mistral"\n  nodes:\n    polish: "mistral"\n', "")
    assert showcase.one("E_VARIANT_INVALID") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:28:3: error E_VARIANT_INVALID question.kind: "
        "experiment reply_noninferior_mistral: question noninferior compares two variants, but the experiment declares 1\n"
        "  hint: declare a baseline and a candidate under variants")


def test_id_duplicate_variant(showcase):
    showcase.edit(NONI, '- id: "mistral"\n', '- id: "gpt"\n')
    assert showcase.only("E_ID_DUPLICATE", "E_VARIANT_INVALID")[0] == (
        "experiments/reply_noninferior_mistral/experiment.yaml:17:3: error E_ID_DUPLICATE variants[1].id: "
        "experiment reply_noninferior_mistral: variant id gpt is used twice\n"
        "  hint: give every variant its own id")


def test_id_duplicate_check_named_like_a_series_metric(showcase):
    showcase.edit(RISK, '- id: "customer_language"', '- id: "success_rate"')
    assert showcase.one("E_ID_DUPLICATE") == (
        "experiments/reply_overpromise_risk/experiment.yaml:17:3: error E_ID_DUPLICATE checks[1].id: "
        "experiment reply_overpromise_risk: check id success_rate is the name of a series metric\n"
        "  hint: rename the check: a metric name means the series metric")


def test_id_duplicate_local_flow_with_a_project_flow_id(showcase):
    showcase.write("experiments/reply_look/flows/draft_reply/flow.yaml", FILES["flows/draft_reply/flow.yaml"])
    showcase.write("experiments/reply_look/flows/draft_reply/nodes/write/write.node.yaml",
                   FILES["flows/draft_reply/nodes/write/write.node.yaml"])
    assert showcase.one("E_ID_DUPLICATE") == (
        "experiments/reply_look/flows/draft_reply/flow.yaml:1:1: error E_ID_DUPLICATE: experiment reply_look: "
        "local flow draft_reply has the id of a project flow\n"
        "  hint: rename the folder experiments/reply_look/flows/draft_reply: a local flow's id can't be the id of a "
        "project flow")


def test_metric_unknown_in_a_guardrail(showcase):
    showcase.edit(NONI, '- metric: "cost_of_pass"', '- metric: "cost_of_passing"')
    assert showcase.one("E_METRIC_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:37:5: error E_METRIC_UNKNOWN "
        "question.guardrails[0].metric: experiment reply_noninferior_mistral: metric cost_of_passing is neither a "
        "check id of the experiment nor a series metric\n"
        "  hint: name a check id (promises, reply) or a series metric (success_rate, cost_usd, cost_of_pass, "
        "latency_p50_ms, latency_p95_ms, schema_valid_first_try, infra_error_rate)")


JUDGE = ('- id: "critique"\n  kind: "continuous"\n  inference: "critique"\n  agent: "deepseek"\n'
         '  validated_by: "reply_noninferior_mistral"\n')
CRITIQUE = ('apiVersion: "aqven/v1"\nkind: "Inference"\ndescription: "A judge of replies"\nin:\n'
            '- name: "reply"\n  type: "Text"\n- name: "resolution"\n  type: "Text"\nout:\n- name: "score"\n  type: "Score"\n')


def with_judge(showcase, judge: str = JUDGE, inference: str = CRITIQUE) -> None:
    showcase.edit(RISK, "checks:\n", "checks:\n" + judge)
    showcase.write("experiments/reply_overpromise_risk/critique.inference.yaml", inference)


def test_a_judge_whose_inputs_are_all_bound_is_clean(showcase):
    with_judge(showcase, JUDGE.replace('  validated_by: "reply_noninferior_mistral"\n', ""))
    assert showcase.text() == "errors: 0, warnings: 0"


def test_judge_unvalidated(showcase):
    """validated_by names an experiment, but no held-out finding of it vouches for this judge (tests/
    tests/experiments/test_judge_identity.py runs the other conditions)."""
    with_judge(showcase)
    assert showcase.one("W_JUDGE_UNVALIDATED") == (
        "experiments/reply_overpromise_risk/experiment.yaml:18:3: warning W_JUDGE_UNVALIDATED checks[0].validated_by: "
        "experiment reply_overpromise_risk: check critique: judge critique (deepseek) is not validated: "
        "reply_noninferior_mistral, its validated_by, has no held-out finding; a verdict resting on it is at most a "
        "signal\n"
        "  hint: run reply_noninferior_mistral on held-out cases with this judge (pytest --aqven-holdout -k "
        "reply_noninferior_mistral) until it is confirmed")


def test_experiment_unknown(showcase):
    with_judge(showcase, JUDGE.replace("reply_noninferior_mistral", "critique_planted_defects"))
    assert showcase.one("E_EXPERIMENT_UNKNOWN") == (
        "experiments/reply_overpromise_risk/experiment.yaml:18:3: error E_EXPERIMENT_UNKNOWN checks[0].validated_by: "
        "check critique: validated_by names experiment critique_planted_defects, which does not exist in the project\n"
        "  hint: name the experiment that measured this judge on planted defects, or remove validated_by")


def test_judge_input_unbound(showcase):
    with_judge(showcase, JUDGE.replace('  validated_by: "reply_noninferior_mistral"\n', ""),
               inference=CRITIQUE.replace('name: "resolution"', 'name: "tone"'))
    assert showcase.one("W_JUDGE_INPUT_UNBOUND") == (
        "experiments/reply_overpromise_risk/experiment.yaml:16:3: warning W_JUDGE_INPUT_UNBOUND checks[0].inference: "
        "experiment reply_overpromise_risk: judge critique of check critique needs input tone, which no document of "
        "its scope carries in range polish..polish of flow support_case; it is not optional, so every judge call "
        "will fail at run time (CHECK_INPUT_MISSING, the judge not called)\n"
        "  hint: the judge binds inputs by name from $in, the outputs of the top-level nodes, $out and "
        "expected_output: rename the input or make the field optional")


def test_judge_input_unread(showcase):
    """A Liquid judge prompt that never shows the reply it grades: a calibration of it is spent for nothing."""
    with_judge(showcase, JUDGE.replace('  validated_by: "reply_noninferior_mistral"\n', ""))
    showcase.write("experiments/reply_overpromise_risk/critique.prompt.md",
                   "Score from 0 to 1 how well a reply keeps this resolution: {{ resolution }}\n{{ output_format }}\n")
    assert showcase.one("W_JUDGE_INPUT_UNREAD") == (
        "experiments/reply_overpromise_risk/experiment.yaml:16:3: warning W_JUDGE_INPUT_UNREAD checks[0].inference: "
        "experiment reply_overpromise_risk: check critique: judge critique: its prompt "
        "experiments/reply_overpromise_risk/critique.prompt.md never reads input reply, so the judge never sees it\n"
        "  hint: show it in the prompt ({{ reply }}) or remove it from the inference: a judge that never sees the "
        "answer it grades spends its calibration for nothing")


def test_a_judge_prompt_that_reads_its_inputs_through_a_fragment_or_plain_text_is_clean(showcase):
    with_judge(showcase, JUDGE.replace('  validated_by: "reply_noninferior_mistral"\n', ""))
    showcase.write("fragments/the_reply.md", "The reply: {{ reply }}\n")
    prompt = "experiments/reply_overpromise_risk/critique.prompt.md"
    showcase.write(prompt, 'Does the reply keep {{ resolution }}?\n{% include "fragments/the_reply" %}\n'
                           "{{ output_format }}\n")
    assert showcase.text() == "errors: 0, warnings: 0"
    showcase.write(prompt, "Score from 0 to 1 how well the reply keeps the resolution.\n")    # inputs appended
    assert showcase.text() == "errors: 0, warnings: 0"


def test_cases_empty_says_which_tag_no_case_carries(showcase):
    """(A mistyped value lists the values the dataset has: tests/check/test_seed_examples.py.)"""
    showcase.edit(LOOK, 'regression: "yes"', 'regression: "yes"\n    topic: "refund"')
    assert showcase.one("E_CASES_EMPTY").endswith(
        "  hint: tag the cases of the dataset or relax the tag filter under cases.tags; no case has tag topic")


def test_cases_empty_of_tags_that_match_apart():
    from pytest_aqven.experiments.case_rules import _tag_values
    from pytest_aqven.project.specs import CaseSpec

    cases = [CaseSpec.model_validate({"name": n, "inputs": {}, "tags": t}) for n, t in [
        ("a", {"topic": "refund", "lang": "en"}), ("b", {"topic": "delivery", "lang": "de"})]]
    assert _tag_values(cases, {"topic": "refund", "lang": "de"}) == "each tag selects cases, but no case carries them all"
    assert _tag_values(cases, {"topic": "refnd", "lang": "fr"}) == "tag topic has: delivery, refund; tag lang has: de, en"


def test_check_context_mismatch(showcase):
    showcase.edit("code/support_case.py", "def reply_keeps_resolution(value,", "def reply_keeps_resolution(value: str,")
    showcase.remove(NONI)
    assert showcase.one("W_CHECK_CONTEXT_MISMATCH") == (
        "experiments/reply_overpromise_risk/experiment.yaml:16:3: warning W_CHECK_CONTEXT_MISMATCH checks[0].run: "
        "experiment reply_overpromise_risk: check promises: parameter value of "
        "@root.code.support_case:reply_keeps_resolution expects str, not a record, but it receives the output of "
        "node polish (fields reply)\n"
        "  hint: type it as a model of the output of node polish, or leave it untyped")


def test_check_context_mismatch_of_a_model(showcase):
    showcase.edit("code/support_case.py", "from pytest_aqven import",
                  "from pydantic import BaseModel\n\nfrom pytest_aqven import")
    showcase.edit("code/support_case.py", "\n\ndef reply_keeps_resolution(value,",
                  "\n\nclass Reply(BaseModel):\n    text: str\n\n\ndef reply_keeps_resolution(value,")
    showcase.edit("code/support_case.py", "context: EvalContext,", "context: EvalContext[dict, Reply],")
    showcase.remove(NONI)
    assert showcase.one("W_CHECK_CONTEXT_MISMATCH").splitlines()[0] == (
        "experiments/reply_overpromise_risk/experiment.yaml:16:3: warning W_CHECK_CONTEXT_MISMATCH checks[0].run: "
        "experiment reply_overpromise_risk: check promises: parameter context (output) of "
        "@root.code.support_case:reply_keeps_resolution expects Reply, whose required fields text it lacks, but it "
        "receives the output of node polish (fields reply)")


def test_variant_error_points_at_the_slot_and_names_the_file(showcase):
    """A use alternative whose outputs do not fit what reads the slot: the usual compiler code, at the slot."""
    showcase.edit(NONI, 'what: "agent"', 'what: "use"')
    showcase.edit(NONI, 'polish: "mistral"', 'polish: "short_polish"')
    showcase.write(f"{NONI_DIR}/nodes/short_polish/short_polish.node.yaml", node_file(
        "code", 'run: "short"\nin:\n- name: "draft"\n  from: "$draft.out.reply"\nout:\n- name: "text"\n  type: "Text"\n'))
    showcase.write(f"{NONI_DIR}/nodes/short_polish/short_polish.py", "def short(draft):\n    return {'text': draft}\n")
    assert showcase.one("E_REF_FIELD_UNKNOWN") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_REF_FIELD_UNKNOWN "
        "variants[1].nodes.polish: variant mistral: flows/support_case/flow.yaml:13:3: flow support_case: returns "
        "reply: $polish.out.reply: node polish has no field reply\n"
        "  hint: name one of its fields: text")


def test_variant_error_inside_the_alternative(showcase):
    showcase.edit(NONI, 'what: "agent"', 'what: "use"')
    showcase.edit(NONI, 'polish: "mistral"', 'polish: "short_polish"')
    showcase.write(f"{NONI_DIR}/nodes/short_polish/short_polish.node.yaml", node_file(
        "llm", 'agent: "gpt"\ninference: "polish"\nin:\n- name: "draft"\n  from: "$drafts.out.reply"\n'
               '- name: "resolution"\n  from: "$resolve.out.resolution"\n- name: "locale"\n  from: "$prepare.out.locale"\n'))
    assert showcase.one("E_REF_UNRESOLVED") == (
        "experiments/reply_noninferior_mistral/experiment.yaml:19:5: error E_REF_UNRESOLVED variants[1].nodes.polish: "
        "variant mistral: experiments/reply_noninferior_mistral/nodes/short_polish/short_polish.node.yaml:9:3: "
        "node polish: input draft: $drafts.out.reply: drafts is not a node of flow support_case\n"
        "  hint: read $input or a node that ran before (prepare, resolve, draft)")


def test_range_fixture_missing(showcase):
    showcase.edit("datasets/support_case_cases.yaml", '    draft:\n      reply: "We will help with refund late."\n', "")
    assert showcase.only("E_RANGE_FIXTURE_MISSING")[0] == (      # and in the two other polish..polish experiments
        "experiments/reply_look/experiment.yaml:6:3: error E_RANGE_FIXTURE_MISSING subject.from: experiment "
        "reply_look: the range polish..polish reads $draft.out.reply, but case refund_late of dataset "
        "support_case_cases has no node_outputs.draft\n"
        "  hint: add node_outputs.draft to the cases of dataset support_case_cases, or start the range at draft: "
        "the nodes above a range do not run, their outputs come from each case")


def test_factor_kind_in_a_subject_with_a_missing_child(showcase):
    """A broken container in the subject still gives the factor rules their candidates."""
    showcase.edit("flows/polish_loop/nodes/improve/improve.node.yaml", '- "critique"\n', '- "critic"\n')
    showcase.edit(NONI, 'flow: "support_case"\n  from: "polish"\n  to: "polish"', 'flow: "polish_loop"')
    showcase.edit(NONI, '  - "polish"\n', '  - "improve"\n')
    showcase.edit(NONI, 'polish: "mistral"', 'improve: "mistral"')
    found = showcase.only("E_FACTOR_KIND", "E_NODE_UNKNOWN", "E_REF_INVALID", "E_DATASET_MISMATCH")
    assert found[0] == (
        "experiments/reply_noninferior_mistral/experiment.yaml:10:5: error E_FACTOR_KIND varies.nodes[0]: experiment "
        "reply_noninferior_mistral: varies.what agent changes llm nodes, but improve is a loop node\n"
        "  hint: name llm nodes of polish_loop (revise) or pick another varies.what")


# --- declarations that cannot measure what their author meant ---------------------------------------




def test_a_binary_cost_check_never_fails(showcase):
    showcase.remove(NONI)
    showcase.edit(RISK, '- id: "customer_language"\n  kind: "binary"\n  use: "language"\n  with:\n'
                        '    field: "$out.reply"\n    locale: "$in.customer.locale"\n',
                  '- id: "spend"\n  kind: "binary"\n  use: "cost_usd"\n')
    assert showcase.one("W_CHECK_NEVER_FAILS") == (
        "experiments/reply_overpromise_risk/experiment.yaml:18:3: warning W_CHECK_NEVER_FAILS checks[1].kind: "
        "experiment reply_overpromise_risk: check spend: the built-in cost_usd always passes, so as a binary check "
        "its rate is 1 whatever the attempts measure\n"
        "  hint: set kind: continuous to read its score (the subject's cost in USD), or use the series metric "
        "cost_usd in the question")


def test_a_pass_fail_builtin_gives_no_score(showcase):
    showcase.remove(NONI)
    showcase.edit(RISK, '- id: "customer_language"\n  kind: "binary"', '- id: "customer_language"\n  kind: "continuous"')
    assert showcase.one("W_CHECK_NO_SCORE") == (
        "experiments/reply_overpromise_risk/experiment.yaml:18:3: warning W_CHECK_NO_SCORE checks[1].kind: "
        "experiment reply_overpromise_risk: check customer_language: the built-in language passes or fails and gives "
        "no score, so as a continuous check every attempt scores an error\n"
        "  hint: set kind: binary (its metric is the pass rate)")


def test_unique_items_on_a_list_of_scalars(showcase):
    showcase.remove(NONI)
    showcase.edit("flows/support_case/nodes/polish/polish.inference.yaml", '- name: "reply"\n  type: "Text"\n',
                  '- name: "reply"\n  type: "Text"\n- name: "tags"\n  type: "Text[]"\n')
    showcase.edit(RISK, '- id: "customer_language"\n  kind: "binary"\n  use: "language"\n  with:\n'
                        '    field: "$out.reply"\n    locale: "$in.customer.locale"\n',
                  '- id: "distinct_tags"\n  kind: "binary"\n  use: "unique_items"\n  with:\n'
                  '    field: "$out.tags"\n    key: "id"\n')
    assert showcase.one("W_CHECK_ITEMS_NOT_RECORDS") == (
        "experiments/reply_overpromise_risk/experiment.yaml:21:5: warning W_CHECK_ITEMS_NOT_RECORDS "
        "checks[1].with.field: experiment reply_overpromise_risk: check distinct_tags: unique_items compares the key "
        "id of each item, but the items of $out.tags are Text, not records: every key reads null, so two items always "
        "count as duplicates\n"
        "  hint: point field at a list of records (key names one of their fields)")
