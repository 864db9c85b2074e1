/**
 * The error answers of Model Studio's OpenAI-compatible endpoint that the scripted
 * upstream plays, with the provider's status, body and codes (docs/upstream-profiles.md
 * says where each comes from). An upstream client classifies failures by exactly these
 * fields, so the stand-in must not paraphrase them.
 */
import type { BurstKind } from "../config/upstream-profile.ts";

type ProviderError = { status: number; body: { error: { message: string; type: string; code: string } } };

export type ProviderErrorKind = Exclude<BurstKind, "reset_mid_stream">;

export const providerErrors: Record<ProviderErrorKind, ProviderError> = {
  // Throttling.AllocationQuota (tokens per minute); transient, clears within the minute.
  allocation_quota: {
    status: 429,
    body: {
      error: {
        message: "You exceeded your current quota, please check your plan and billing details.",
        type: "insufficient_quota",
        code: "insufficient_quota",
      },
    },
  },
  // Throttling.RateQuota (requests per minute).
  rate_quota: {
    status: 429,
    body: {
      error: {
        message:
          "You have exceeded your current request limit. For details, see: https://help.aliyun.com/zh/model-studio/error-code#rate-limit",
        type: "limit_requests",
        code: "limit_requests",
      },
    },
  },
  server_error: {
    status: 500,
    body: {
      error: {
        message: "An internal error has occured, please try again later or contact service support.",
        type: "internal_error",
        code: "internal_error",
      },
    },
  },
  service_unavailable: {
    status: 503,
    body: {
      error: {
        message: "The service is temporarily unavailable, please try again later.",
        type: "service_unavailable",
        code: "ServiceUnavailable",
      },
    },
  },
};

export function providerErrorResponse(kind: ProviderErrorKind): Response {
  const { status, body } = providerErrors[kind];
  return Response.json(body, { status });
}
