"""JSON Schema of the parser Lambda's responses, transcribed from the AWS documentation of the advanced
prompts' parser Lambda (see shared reference §2). Used by the contract tests."""

from __future__ import annotations

_PARTS = {
    "type": "array",
    "items": {
        "type": "object", "required": ["text"], "additionalProperties": False,
        "properties": {
            "text": {"type": "string"},
            "references": {"type": "array", "items": {
                "type": "object", "required": ["sourceId"], "additionalProperties": False,
                "properties": {"sourceId": {"type": "string"}}}},
        },
    },
}
_CITATIONS = {"type": "object", "required": ["generatedResponseParts"], "additionalProperties": False,
              "properties": {"generatedResponseParts": _PARTS}}
_INVOCATION = {
    "type": "object", "required": ["actionGroupName", "functionName", "actionGroupInput"],
    "additionalProperties": False,
    "properties": {
        "actionGroupName": {"type": "string", "minLength": 1},
        "functionName": {"type": "string", "minLength": 1},
        "id": {"type": "string"},
        "actionGroupInput": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["value"], "properties": {"value": {"type": "string"}}}},
    },
}
_ORCH = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "rationale": {"type": "string"},
        "parsingErrorDetails": {"type": "object", "required": ["repromptResponse"], "additionalProperties": False,
                                "properties": {"repromptResponse": {"type": "string", "minLength": 1}}},
        "responseDetails": {
            "type": "object", "required": ["invocationType"], "additionalProperties": False,
            "properties": {
                "invocationType": {"enum": ["ACTION_GROUP", "KNOWLEDGE_BASE", "FINISH", "ASK_USER"]},
                "actionGroupInvocation": _INVOCATION,
                "actionGroupInvocations": {"type": "array", "minItems": 1, "items": _INVOCATION},
                "agentAskUser": {"type": "object", "required": ["responseText"],
                                 "properties": {"responseText": {"type": "string"}, "id": {"type": "string"}}},
                "agentFinalResponse": {"type": "object", "required": ["responseText"], "additionalProperties": False,
                                       "properties": {"responseText": {"type": "string"}, "citations": _CITATIONS}},
            },
        },
    },
    "oneOf": [{"required": ["parsingErrorDetails"], "not": {"required": ["responseDetails"]}},
              {"required": ["responseDetails"], "not": {"required": ["parsingErrorDetails"]}}],
}
PARSER_RESPONSE_SCHEMA = {
    "type": "object", "required": ["messageVersion", "promptType"],
    "properties": {
        "messageVersion": {"enum": ["1.0", "2.0"]},
        "promptType": {"type": "string"},
        "preProcessingParsedResponse": {"type": "object", "required": ["isValidInput", "rationale"],
                                        "additionalProperties": False,
                                        "properties": {"isValidInput": {"type": "boolean"},
                                                       "rationale": {"type": "string"}}},
        "orchestrationParsedResponse": _ORCH,
        "knowledgeBaseResponseGenerationParsedResponse": {
            "type": "object", "required": ["generatedResponse"],
            "properties": {"generatedResponse": {"type": "object", "required": ["generatedResponseParts"],
                                                 "properties": {"generatedResponseParts": _PARTS}}}},
        "postProcessingParsedResponse": {"type": "object", "required": ["responseText"], "additionalProperties": False,
                                         "properties": {"responseText": {"type": "string"}, "citations": _CITATIONS}},
    },
    "allOf": [
        {"if": {"properties": {"promptType": {"const": "PRE_PROCESSING"}}},
         "then": {"required": ["preProcessingParsedResponse"]}},
        {"if": {"properties": {"promptType": {"const": "ORCHESTRATION"}}},
         "then": {"required": ["orchestrationParsedResponse"]}},
        {"if": {"properties": {"promptType": {"const": "POST_PROCESSING"}}},
         "then": {"required": ["postProcessingParsedResponse"]}},
        {"if": {"properties": {"promptType": {"const": "KNOWLEDGE_BASE_RESPONSE_GENERATION"}}},
         "then": {"required": ["knowledgeBaseResponseGenerationParsedResponse"]}},
        {"if": {"properties": {"messageVersion": {"const": "1.0"}, "orchestrationParsedResponse": {
            "properties": {"responseDetails": {"properties": {"invocationType": {"const": "ACTION_GROUP"}}}}}},
            "required": ["orchestrationParsedResponse"]},
         "then": {"properties": {"orchestrationParsedResponse": {"properties": {"responseDetails": {
             "required": ["actionGroupInvocation"]}}}}}},
    ],
}
