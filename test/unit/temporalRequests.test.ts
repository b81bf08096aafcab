import { describe, expect, it } from 'vitest';
import { frontendRequests, requestsPerPage } from '../../bench/lib/temporalRequests';

// P6: bench/ocr reports the Temporal frontend's requests per page from the server's own counter.
const PAGE = [
  '# HELP service_requests service_requests counter',
  '# TYPE service_requests counter',
  'service_requests{namespace="default",operation="RecordActivityTaskHeartbeat",service_name="frontend"} 110',
  'service_requests{namespace="default",operation="RecordActivityTaskHeartbeat",service_name="history"} 110',
  'service_requests{namespace="_unknown_",operation="PollWorkflowTaskQueue",service_name="frontend"} 4',
  'service_requests{namespace="default",operation="PollWorkflowTaskQueue",service_name="frontend"} 96',
  'service_latency_bucket{operation="PollWorkflowTaskQueue",service_name="frontend",le="1"} 7',
].join('\n');

describe('P6 the Temporal request counts bench/ocr reports', () => {
  it('P6 counts the frontend service only, summed over the other labels', () => {
    expect(frontendRequests(PAGE)).toEqual({
      RecordActivityTaskHeartbeat: 110,
      PollWorkflowTaskQueue: 100,
    });
  });

  it('P6 gives each operation that moved per page, operations that did not left out', () => {
    expect(
      requestsPerPage(
        { RecordActivityTaskHeartbeat: 10, PollWorkflowTaskQueue: 100 },
        {
          RecordActivityTaskHeartbeat: 110,
          PollWorkflowTaskQueue: 100,
          StartWorkflowExecution: 40,
        },
        40,
      ),
    ).toEqual({ RecordActivityTaskHeartbeat: 2.5, StartWorkflowExecution: 1 });
  });
});
