"""The project-level codes a loader needs: references, nodes, types, agents, inferences, code
references, unsupported kinds, datasets. One broken thing each; the whole diagnostic is asserted."""
import pytest

from .showcase import FILES

SC = "flows/support_case/"
GATHER = "flows/gather/nodes/"
LOOP = "flows/polish_loop/nodes/improve/"
LOOK = "experiments/reply_look/experiment.yaml"


def test_ref_that_does_not_parse(showcase):
    showcase.edit(SC + "nodes/polish/polish.node.yaml", '"$draft.out.reply"', '"$draft.out.reply[x]"')
    assert showcase.one("E_REF_INVALID") == (
        "flows/support_case/nodes/polish/polish.node.yaml:8:3: error E_REF_INVALID in[0].from: node polish: input "
        "draft: $draft.out.reply[x]: cannot read it from position 17 ('[x]')\n"
        "  hint: a reference reads $input.<field>, $run.context.<key> or $<node>.out.<field>")


def test_ref_to_a_node_without_out(showcase):
    showcase.edit(SC + "nodes/polish/polish.node.yaml", '"$draft.out.reply"', '"$draft.reply"')
    assert showcase.one("E_REF_INVALID") == (
        "flows/support_case/nodes/polish/polish.node.yaml:8:3: error E_REF_INVALID in[0].from: node polish: input "
        "draft: $draft.reply: a node reference reads $draft.out\n"
        "  hint: a reference reads $input.<field>, $run.context.<key> or $<node>.out.<field>")


def test_ref_to_a_node_that_runs_later(showcase):
    showcase.edit(SC + "nodes/resolve/resolve.node.yaml", '"$prepare.out.text"', '"$polish.out.reply"')
    assert showcase.one("E_REF_UNRESOLVED") == (
        "flows/support_case/nodes/resolve/resolve.node.yaml:8:3: error E_REF_UNRESOLVED in[0].from: node resolve: "
        "input text: $polish.out.reply: node polish has not run before this point\n"
        "  hint: read $input or a node that ran before (prepare)")


def test_ref_to_no_node(showcase):
    showcase.edit(SC + "nodes/resolve/resolve.node.yaml", '"$prepare.out.text"', '"$prep.out.text"')
    assert showcase.one("E_REF_UNRESOLVED") == (
        "flows/support_case/nodes/resolve/resolve.node.yaml:8:3: error E_REF_UNRESOLVED in[0].from: node resolve: "
        "input text: $prep.out.text: prep is not a node of flow support_case\n"
        "  hint: read $input or a node that ran before (prepare)")


def test_ref_to_a_sibling_that_runs_later_in_a_loop_body(showcase):
    showcase.edit(LOOP + "revise.node.yaml", '"$acc.revise.out.reply"', '"$critique.out.score"')
    assert showcase.one("E_REF_UNRESOLVED") == (
        "flows/polish_loop/nodes/improve/revise.node.yaml:8:3: error E_REF_UNRESOLVED in[0].from: node revise: "
        "input previous: $critique.out.score: node critique has not run before this point\n"
        "  hint: read $input or a node that ran before (no node yet)")


def test_ref_to_item_outside_a_map(showcase):
    showcase.edit(GATHER + "both/left.node.yaml", '"$words.out.mood"', '"$item"')
    assert showcase.one("E_REF_UNRESOLVED") == (
        "flows/gather/nodes/both/left.node.yaml:8:3: error E_REF_UNRESOLVED in[0].from: node left: input text: "
        "$item: $item has no value here\n"
        "  hint: $item is read inside the body of a map")


def test_ref_to_a_run_context_key_the_flow_does_not_list(showcase):
    showcase.edit(GATHER + "words/words.node.yaml", '"$run.context.locale"', '"$run.context.date"')
    assert showcase.one("E_REF_UNRESOLVED") == (
        "flows/gather/nodes/words/words.node.yaml:10:3: error E_REF_UNRESOLVED in[1].from: node words: input "
        "locale: $run.context.date: flow gather does not list date under context\n"
        "  hint: add date to context: of flow gather")


def test_ref_to_a_field_a_node_does_not_output(showcase):
    showcase.edit(SC + "nodes/resolve/resolve.node.yaml", '"$prepare.out.text"', '"$prepare.out.txt"')
    assert showcase.one("E_REF_FIELD_UNKNOWN") == (
        "flows/support_case/nodes/resolve/resolve.node.yaml:8:3: error E_REF_FIELD_UNKNOWN in[0].from: node "
        "resolve: input text: $prepare.out.txt: node prepare has no field txt\n"
        "  hint: name one of its fields: text, locale")


def test_ref_into_a_nested_input_type(showcase):
    showcase.edit(SC + "nodes/prepare/prepare.node.yaml", '"$input.customer.locale"', '"$input.customer.lang"')
    assert showcase.one("E_REF_FIELD_UNKNOWN") == (
        "flows/support_case/nodes/prepare/prepare.node.yaml:10:3: error E_REF_FIELD_UNKNOWN in[1].from: node "
        "prepare: input locale: $input.customer.lang: Customer has no field lang\n"
        "  hint: name one of its fields: name, locale")


def test_ref_reads_a_field_of_a_list(showcase):
    showcase.edit(GATHER + "both/right.node.yaml", '"$each.out.tags[0]"', '"$each.out.tags.first"')
    assert showcase.one("E_REF_FIELD_UNKNOWN") == (
        "flows/gather/nodes/both/right.node.yaml:8:3: error E_REF_FIELD_UNKNOWN in[0].from: node right: input text: "
        "$each.out.tags.first: Text[] is a list: read an item with [n] or every item with [*] before .first\n"
        "  hint: fix the path of the reference")


def test_node_unknown_in_order(showcase):
    showcase.edit(SC + "flow.yaml", '- "draft"\n', '- "drafts"\n')
    assert showcase.only("E_NODE_UNKNOWN", "E_REF_UNRESOLVED")[0] == (
        "flows/support_case/flow.yaml:9:3: error E_NODE_UNKNOWN order[2]: flow support_case: node drafts has no "
        "file nodes/drafts/drafts.node.yaml\n"
        "  hint: create the node or name one of: draft, polish, prepare, resolve")


def test_node_unknown_in_a_loop_body(showcase):
    showcase.edit(LOOP + "improve.node.yaml", '- "critique"\n', '- "critic"\n')
    assert showcase.only("E_NODE_UNKNOWN", "E_REF_INVALID")[0] == (
        "flows/polish_loop/nodes/improve/improve.node.yaml:7:3: error E_NODE_UNKNOWN body[1]: node improve: child "
        "node critic has no file critic.node.yaml beside improve.node.yaml\n"
        "  hint: create critic.node.yaml in the folder of improve: children live flat in the folder of their "
        "top-level node")


def test_type_unknown(showcase):
    showcase.edit(SC + "flow.yaml", 'output: "CaseOutcome"', 'output: "CaseOutcom"')
    assert showcase.one("E_TYPE_UNKNOWN") == (
        "flows/support_case/flow.yaml:5:1: error E_TYPE_UNKNOWN output: flow support_case: type CaseOutcom is "
        "neither a built-in type nor a type of types/\n"
        "  hint: add types/<folder>/<snake_name>.yaml or name one of: CaseOutcome, CaseRequest, Customer, Draft, "
        "DraftRequest, Score")


def test_type_unknown_in_a_record_field_does_not_cascade(showcase):
    showcase.edit("types/records/customer.yaml", 'type: "Locale"', 'type: "Lokale"')
    assert showcase.one("E_TYPE_UNKNOWN") == (
        "types/records/customer.yaml:9:3: error E_TYPE_UNKNOWN fields[1].type: type Customer: field locale: type "
        "Lokale is neither a built-in type nor a type of types/\n"
        "  hint: add types/<folder>/<snake_name>.yaml or name one of: CaseOutcome, CaseRequest, Customer, Draft, "
        "DraftRequest, Score")


def test_agent_unknown_on_a_node(showcase):
    showcase.edit(SC + "nodes/resolve/resolve.node.yaml", 'agent: "deepseek"', 'agent: "deepseak"')
    assert showcase.one("E_AGENT_UNKNOWN") == (
        "flows/support_case/nodes/resolve/resolve.node.yaml:5:1: error E_AGENT_UNKNOWN agent: node resolve: agent "
        "deepseak does not exist in the project\n"
        "  hint: name an agent of agents/ (deepseek, gpt, mistral)")


def test_provider_unknown(showcase):
    showcase.edit("agents/gpt.yaml", 'model: "sim:gpt-oss"', 'model: "openai:gpt-oss"')
    assert showcase.one("E_PROVIDER_UNKNOWN") == (
        "agents/gpt.yaml:4:1: error E_PROVIDER_UNKNOWN model: agent gpt: provider openai is not declared in aqven.yaml\n"
        "  hint: declare it under providers or use one of: sim")


def test_inference_unknown(showcase):
    showcase.remove(SC + "nodes/resolve/resolve.inference.yaml")
    assert showcase.one("E_INFERENCE_UNKNOWN") == (
        "flows/support_case/nodes/resolve/resolve.node.yaml:3:1: error E_INFERENCE_UNKNOWN node: node resolve: "
        "inference resolve has no file resolve.inference.yaml\n"
        "  hint: create resolve.inference.yaml beside the node")


def test_binding_of_a_field_the_inference_does_not_have(showcase):
    showcase.edit(SC + "nodes/resolve/resolve.node.yaml", 'name: "text"', 'name: "txt"')
    assert showcase.only("E_BINDING_UNKNOWN", "E_BINDING_MISSING") == [
        "flows/support_case/nodes/resolve/resolve.node.yaml:6:1: error E_BINDING_MISSING in: node resolve: "
        "inference resolve needs input text, which the node does not bind\n"
        '  hint: add {name: text, from: "$..."} under in',
        "flows/support_case/nodes/resolve/resolve.node.yaml:7:3: error E_BINDING_UNKNOWN in[0].name: node resolve: "
        "input txt is not a field of inference resolve\n"
        "  hint: bind the fields of inference resolve: text"]


def test_call_binding_does_not_cover_the_called_flow_input(showcase):
    showcase.edit(SC + "nodes/draft/draft.node.yaml", 'name: "resolution"', 'name: "resolutions"')
    assert showcase.only("E_BINDING_UNKNOWN", "E_BINDING_MISSING")[0] == (
        "flows/support_case/nodes/draft/draft.node.yaml:6:1: error E_BINDING_MISSING in: node draft: the input "
        "DraftRequest of flow draft_reply needs input resolution, which the node does not bind\n"
        '  hint: add {name: resolution, from: "$..."} under in')


def test_code_signature_mismatch(showcase):
    showcase.edit(SC + "nodes/prepare/prepare.py", "locale: str)", "lang: str)")
    assert showcase.only("E_CODE_SIGNATURE_MISMATCH")[1] == (
        "flows/support_case/nodes/prepare/prepare.node.yaml:9:3: error E_CODE_SIGNATURE_MISMATCH in[1].name: node "
        "prepare: input locale is not a parameter of prepare (message, lang)\n"
        "  hint: name the inputs like the parameters of the function: it is called with keyword arguments")


def test_code_ref_unresolved_on_a_node(showcase):
    showcase.edit(SC + "nodes/prepare/prepare.node.yaml", 'run: "prepare"', 'run: "prepar"')
    assert showcase.one("E_CODE_REF_UNRESOLVED") == (
        "flows/support_case/nodes/prepare/prepare.node.yaml:5:1: error E_CODE_REF_UNRESOLVED run: node prepare: "
        "prepar: module lumen.flows.support_case.nodes.prepare.prepare has no function prepar\n"
        "  hint: write fn for a function of the .py file beside the YAML, @root.<module>:<fn> or "
        "<package>.<module>:<fn>, and make the module import cleanly")


def test_code_ref_unresolved_on_a_provider(showcase):
    showcase.edit("aqven.yaml", '"@root.sim:complete"', '"@root.simm:complete"')
    assert showcase.one("E_CODE_REF_UNRESOLVED") == (
        "aqven.yaml:8:3: error E_CODE_REF_UNRESOLVED providers[0].run: provider sim: @root.simm:complete: module "
        "lumen.simm cannot be imported: No module named 'lumen.simm'\n"
        "  hint: write @root.<module>:<function> or <package>.<module>:<function>, and make the module import cleanly")


def test_code_ref_unresolved_on_a_check(showcase):
    showcase.edit("experiments/reply_overpromise_risk/experiment.yaml", 'reply_keeps_resolution"',
                  'reply_keeps_resolutions"')
    assert showcase.one("E_CODE_REF_UNRESOLVED") == (
        "experiments/reply_overpromise_risk/experiment.yaml:16:3: error E_CODE_REF_UNRESOLVED checks[0].run: "
        "experiment reply_overpromise_risk: check promises: evaluator @root.code.support_case:reply_keeps_resolutions: "
        "module lumen.code.support_case has no function reply_keeps_resolutions\n"
        "  hint: write @root.<module>:<function> or <package>.<module>:<function>, and make the module import cleanly")


def test_user_code_that_exits_while_importing_is_a_diagnostic(showcase, capsys):
    showcase.write("code/support_case.py", "import sys\nprint('hello from user code')\nsys.exit(3)\n")
    found = showcase.only("E_CODE_REF_UNRESOLVED")
    assert found[1].splitlines()[0] == (
        "experiments/reply_overpromise_risk/experiment.yaml:16:3: error E_CODE_REF_UNRESOLVED checks[0].run: "
        "experiment reply_overpromise_risk: check promises: evaluator @root.code.support_case:reply_keeps_resolution: "
        "importing it raised SystemExit: 3")
    assert "hello" not in capsys.readouterr().out


def test_user_code_that_raises_while_importing_is_a_diagnostic(showcase):
    showcase.write("code/support_case.py", "raise RuntimeError('no database here')\n")
    assert showcase.only("E_CODE_REF_UNRESOLVED")[1].splitlines()[0].endswith(
        "module lumen.code.support_case raised RuntimeError while importing: no database here")


def test_human_node_is_valid_aqven_and_its_spec_is_checked(showcase):
    """Every node kind of AQVEN passes aqven check, and its spec is checked."""
    human = ('apiVersion: "aqven/v1"\nkind: "Node"\nnode: "human"\ndescription: "Ask a person"\nform: "CaseOutcome"\n'
             'assignee: "support_lead"\ntimeout_seconds: 3600\non_timeout:\n  policy: "fail"\n')
    showcase.write(SC + "nodes/resolve/resolve.node.yaml", human)
    assert showcase.diagnostics() == []
    showcase.write(SC + "nodes/resolve/resolve.node.yaml", human.replace('assignee: "support_lead"\n', ""))
    assert showcase.one("E_SPEC_INVALID").startswith(
        "flows/support_case/nodes/resolve/resolve.node.yaml:1:1: error E_SPEC_INVALID assignee: node resolve: "
        "key assignee is required")


def test_case_duplicate(showcase):
    showcase.edit("datasets/support_case_cases.yaml", 'name: "gift_return"', 'name: "price_drop"')
    assert showcase.one("E_CASE_DUPLICATE") == (
        "datasets/support_case_cases.yaml:252:3: error E_CASE_DUPLICATE cases[13].name: case name price_drop is "
        "already taken by cases[12] of dataset support_case_cases\n"
        "  hint: rename one of the cases: name is the case key and is unique in a dataset")


def test_case_names_that_look_the_same_are_duplicates(showcase):
    """Names that differ only by Unicode normalization or a trailing space are one name."""
    showcase.edit("datasets/support_case_cases.yaml", 'name: "price_drop"', 'name: "caf\u00e9"')   # NFC
    showcase.edit("datasets/support_case_cases.yaml", 'name: "gift_return"', 'name: "cafe\u0301"')  # NFD
    assert showcase.one("E_CASE_DUPLICATE").startswith(
        "datasets/support_case_cases.yaml:252:3: error E_CASE_DUPLICATE cases[13].name: case name cafe\u0301 is "
        "cases[12]'s 'caf\u00e9' once Unicode-normalized and trimmed of dataset support_case_cases")


@pytest.mark.parametrize("name", ["a::b", "a[1]", "a/b", "two words", "nul\\u0000", "line\\nbreak"])
def test_case_names_a_node_id_cannot_give_back(showcase, name):
    """A case name is a part of its attempts' node ids: one pytest cannot select again is refused."""
    showcase.edit("datasets/support_case_cases.yaml", 'name: "gift_return"', f'name: "{name}"')
    found = showcase.one("E_CASE_NAME_INVALID")
    assert found.startswith("datasets/support_case_cases.yaml:252:3: error E_CASE_NAME_INVALID cases[13].name: case "
                            "name "), found
    assert "which a pytest node id cannot give back" in found and "hint: name cases with letters, digits" in found


def test_case_inputs_that_do_not_fit_the_flow_input(showcase):
    showcase.edit(LOOK, '  from: "polish"\n  to: "polish"\n', "")
    showcase.edit("datasets/support_case_cases.yaml", '      name: "Ada"\n      locale: "en-GB"\n    message: "My problem: refund late"',
                  '      name: "Ada"\n      locale: "en-GB"\n    message: 5')
    assert showcase.only("E_CASE_INPUTS_INVALID")[0] == (
        "datasets/support_case_cases.yaml:10:5: error E_CASE_INPUTS_INVALID cases[0].inputs.message: experiment "
        "reply_look: case refund_late: inputs do not fit the input CaseRequest of flow support_case: message: input "
        "should be a valid string\n"
        "  hint: fields of CaseRequest: customer, message")


def test_case_inputs_of_a_full_run_need_every_field(showcase):
    showcase.edit(LOOK, '  from: "polish"\n  to: "polish"\n', "")
    showcase.edit("datasets/support_case_cases.yaml", '    message: "My problem: refund late"\n', "")
    assert showcase.one("E_CASE_INPUTS_INVALID") == (
        "datasets/support_case_cases.yaml:6:3: error E_CASE_INPUTS_INVALID cases[0].inputs.message: experiment "
        "reply_look: case refund_late: inputs do not fit the input CaseRequest of flow support_case: message: field "
        "required\n"
        "  hint: fields of CaseRequest: customer, message")


def test_check_params(showcase):
    showcase.edit("experiments/reply_overpromise_risk/experiment.yaml", '    field: "$out.reply"', '    fields: "$out.reply"')
    assert showcase.one("E_CHECK_PARAMS") == (
        "experiments/reply_overpromise_risk/experiment.yaml:20:3: error E_CHECK_PARAMS checks[1].with: experiment "
        "reply_overpromise_risk: check customer_language: evaluator use: language: with parameters are invalid: "
        "field: field required\n"
        "  hint: the parameters of use: language are: field, locale")


def test_check_params_of_a_custom_evaluator(showcase):
    showcase.edit("experiments/reply_overpromise_risk/experiment.yaml",
                  'run: "@root.code.support_case:reply_keeps_resolution"\n',
                  'run: "@root.code.support_case:reply_keeps_resolution"\n  with:\n    strict: true\n')
    assert showcase.one("E_CHECK_PARAMS") == (
        "experiments/reply_overpromise_risk/experiment.yaml:18:5: error E_CHECK_PARAMS checks[0].with.strict: "
        "experiment reply_overpromise_risk: check promises: evaluator @root.code.support_case:reply_keeps_resolution: "
        "with parameters are invalid: strict: extra inputs are not permitted\n"
        "  hint: the parameters of @root.code.support_case:reply_keeps_resolution are: none")


def test_check_path_unknown(showcase):
    showcase.edit("experiments/reply_overpromise_risk/experiment.yaml", 'field: "$out.reply"', 'field: "$out.replies"')
    assert showcase.one("E_CHECK_PATH_UNKNOWN") == (
        "experiments/reply_overpromise_risk/experiment.yaml:21:5: error E_CHECK_PATH_UNKNOWN checks[1].with.field: "
        "experiment reply_overpromise_risk: check customer_language: path $out.replies starts with replies, which is "
        "not a field of the output of node polish\n"
        "  hint: name a field of the output of node polish: reply")


def test_policy_unknown_evaluator(showcase):
    showcase.edit("experiments/reply_overpromise_risk/experiment.yaml", 'use: "language"', 'use: "langauge"')
    assert showcase.one("E_POLICY_UNKNOWN") == (
        "experiments/reply_overpromise_risk/experiment.yaml:19:3: error E_POLICY_UNKNOWN checks[1].use: experiment "
        "reply_overpromise_risk: check customer_language: use: langauge is not a built-in evaluator\n"
        "  hint: name a built-in evaluator (citations_in_sources, cost_usd, expected, ids_in_allowed_set, language, "
        "latency_ms, max_words, no_pii, not_empty, regex, unique_items) or run your own with run: "
        "\"<module>:<function>\"")


def test_policy_unknown_join(showcase):
    showcase.edit(GATHER + "both/both.node.yaml", 'use: "quorum"', 'use: "quorom"')
    assert showcase.one("E_POLICY_UNKNOWN") == (
        "flows/gather/nodes/both/both.node.yaml:9:3: error E_POLICY_UNKNOWN join.use: node both: join policy quorom "
        "is not a built-in policy\n"
        "  hint: use one of all, any, first_success, quorum, or run: \"<module>:<function>\"")


def test_call_recursive(showcase):
    showcase.edit("flows/draft_reply/flow.yaml", '- "write"\n', '- "write"\n- "again"\n')
    showcase.write("flows/draft_reply/nodes/again/again.node.yaml",
                   'apiVersion: "aqven/v1"\nkind: "Node"\nnode: "call"\ndescription: "Again"\nflow: "draft_reply"\nin:\n'
                   '- name: "message"\n  from: "$input.message"\n- name: "resolution"\n  from: "$input.resolution"\n')
    assert showcase.one("E_CALL_RECURSIVE") == (
        "flows/draft_reply/nodes/again/again.node.yaml:5:1: error E_CALL_RECURSIVE flow: node again: flow "
        "draft_reply calls flow draft_reply again, directly or through other flows\n"
        "  hint: a flow cannot call itself: move the shared nodes into a third flow that both call")


def test_returns_a_field_the_output_type_does_not_have(showcase):
    showcase.edit(SC + "flow.yaml", '- name: "resolution"', '- name: "resolutions"')
    assert showcase.only("E_RETURNS_INVALID")[1] == (
        "flows/support_case/flow.yaml:14:3: error E_RETURNS_INVALID returns[1].name: flow support_case: returns "
        "resolutions, which is not a field of its output type CaseOutcome\n"
        "  hint: return the fields of CaseOutcome: reply, resolution")


def test_duplicate_node_ids_in_a_flow(showcase):
    showcase.write(SC + "nodes/polish/prepare.node.yaml", FILES[SC + "nodes/prepare/prepare.node.yaml"])
    assert showcase.one("E_ID_DUPLICATE") == (
        "flows/support_case/nodes/polish/prepare.node.yaml:1:1: error E_ID_DUPLICATE: flow support_case: node id "
        "prepare is already taken by flows/support_case/nodes/prepare/prepare.node.yaml\n"
        "  hint: rename one of the two files: a node's id is its file name and is unique in a flow")


def test_broken_yaml_is_one_diagnostic_without_cascades(showcase):
    showcase.edit(SC + "flow.yaml", "order:\n", "order: [\n")
    assert showcase.one("E_YAML_SYNTAX") == (
        "flows/support_case/flow.yaml:7:1: error E_YAML_SYNTAX: invalid YAML: expected the node content, but found '-'\n"
        "  hint: fix the YAML syntax at this position")


def test_unknown_key_in_a_flow(showcase):
    showcase.edit(SC + "flow.yaml", "order:", 'ordre:\n- "x"\norder:')
    assert showcase.one("E_UNKNOWN_KEY") == (
        "flows/support_case/flow.yaml:6:1: error E_UNKNOWN_KEY ordre: flow support_case: key ordre is not allowed here\n"
        "  hint: did you mean order? allowed keys: apiVersion, kind, description, input, output, returns, order, "
        "context, limits, requires")


def test_python_flow_that_builds_nothing_is_named_not_ignored(showcase):
    showcase.write("flows/scripted/flow.py", "def build():\n    return None\n")
    assert showcase.one("E_FLOW_PY_INVALID") == (
        "flows/scripted/flow.py: error E_FLOW_PY_INVALID: flow scripted: build() returned NoneType, not the Flow of "
        "aqven.spec.flow(...)\n"
        "  hint: def build() -> Flow: return flow(description=..., input=<model>, output=<model>, returns={...}, "
        "nodes=[...])")
