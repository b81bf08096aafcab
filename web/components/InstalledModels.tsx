import type { EngineModel } from '@quire/core/engineModels';

/**
 * V9: the models this installation has, as a person chooses among them: engine, language,
 * script, the engine's own model name, and what was measured of it (docs/engines.md).
 */
export function InstalledModels({ models }: { models: EngineModel[] }) {
  return (
    <section aria-labelledby="installed-models">
      <h2 id="installed-models">Installed models</h2>
      <table data-testid="installed-models">
        <thead>
          <tr>
            <th scope="col">Engine</th>
            <th scope="col">Language</th>
            <th scope="col">Script</th>
            <th scope="col">Model</th>
            <th scope="col">Measured quality</th>
          </tr>
        </thead>
        <tbody>
          {models.map((m) => (
            <tr key={`${m.provider}:${m.language}`}>
              <td>{m.provider}</td>
              <td>
                <code>{m.language === '*' ? 'any' : m.language}</code>
              </td>
              <td>{m.script}</td>
              <td>{m.model}</td>
              <td>{m.quality ?? <span className="muted">not measured</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
