//! What `rtvmm analyze` reads: a scenario, or a CARTS XML file.

use std::path::Path;

use rtvmm_analysis::{parse_carts, CartsSystem};

use super::AnalyzeError;
use rtvmm_scenario::Scenario;

/// What to analyse. Not boxed: one is made per command, and its users match on it.
#[allow(clippy::large_enum_variant)]
pub enum Input {
    Scenario(Scenario),
    Carts { file: String, system: CartsSystem },
}

impl Input {
    /// Reads a CARTS XML file (by the extension `.xml`) or a scenario, the latter without
    /// the policies' checks so that VCPU parameters are optional.
    pub fn load(path: &Path) -> Result<Input, AnalyzeError> {
        let file = path.display().to_string();
        if path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("xml"))
        {
            let text = rtvmm_system::input::read_text(path).map_err(|error| AnalyzeError::Io {
                file: file.clone(),
                error,
            })?;
            let system = parse_carts(&text).map_err(|error| AnalyzeError::Carts {
                file: file.clone(),
                error,
            })?;
            check_carts_names(&file, &system)?;
            Ok(Input::Carts { file, system })
        } else {
            Ok(Input::Scenario(Scenario::load_for_analysis(path)?))
        }
    }

    /// The file it came from.
    pub fn file(&self) -> &str {
        match self {
            Input::Scenario(s) => &s.file,
            Input::Carts { file, .. } => file,
        }
    }
}

/// Refuses CARTS names longer than [`rtvmm_scenario::MAX_NAME_CHARS`], as a scenario does.
fn check_carts_names(file: &str, system: &CartsSystem) -> Result<(), AnalyzeError> {
    let too_long = |what, name: &str, line| {
        let length = name.chars().count();
        (length > rtvmm_scenario::MAX_NAME_CHARS).then(|| AnalyzeError::NameTooLong {
            file: file.to_string(),
            line,
            what,
            length,
        })
    };
    let mut components: Vec<_> = system.components.iter().collect();
    while let Some(c) = components.pop() {
        if let Some(e) = too_long("component", &c.name, c.line) {
            return Err(e);
        }
        for t in &c.tasks {
            if let Some(e) = too_long("task", &t.name, t.line) {
                return Err(e);
            }
        }
        components.extend(c.children.iter());
    }
    Ok(())
}
