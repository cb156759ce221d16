//! Integer fields of request bodies as JSON Schema reads `integer`: a JSON integer, or a
//! number with no fraction (`3.0`), which is the same integer spelled otherwise. serde
//! alone takes only the first, so a client whose JSON library writes `3.0` would be
//! refused a value the document allows. Used as `#[serde(deserialize_with = ...)]`.

use serde::Deserialize;
use serde::de::{Deserializer, Error};
use serde_json::Number;

/// An integer field.
pub fn int<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64>,
{
    let number = Number::deserialize(deserializer)?;
    let out_of_range = || D::Error::custom(format!("{number} is out of range"));
    if let Some(value) = number.as_u64() {
        return T::try_from(value).map_err(|_| out_of_range());
    }
    if let Some(value) = number.as_i64() {
        return T::try_from(value).map_err(|_| out_of_range());
    }
    match number.as_f64() {
        // Past 2^53 a float no longer spells one integer.
        Some(value) if value.fract() == 0.0 && value.abs() <= 2f64.powi(53) => {
            T::try_from(value as i64).map_err(|_| out_of_range())
        }
        _ => Err(D::Error::custom(format!("{number} is not an integer"))),
    }
}

/// An optional integer field (with `#[serde(default)]`): `null` or absent is `None`.
pub fn option<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64>,
{
    #[derive(Deserialize)]
    struct Whole<T: TryFrom<i64> + TryFrom<u64>>(#[serde(deserialize_with = "int")] T);
    Ok(Option::<Whole<T>>::deserialize(deserializer)?.map(|Whole(value)| value))
}

/// An optional integer field that `null` clears (with `#[serde(default)]`): absent is
/// `None`, `null` is `Some(None)`.
pub fn clearable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64> + TryFrom<u64>,
{
    option(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(deserialize_with = "super::int")]
        priority: i32,
        #[serde(default, deserialize_with = "super::option")]
        limit: Option<u32>,
    }

    fn parse(json: &str) -> Result<(i32, Option<u32>), String> {
        serde_json::from_str::<Body>(json)
            .map(|b| (b.priority, b.limit))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn integers_are_taken_however_json_spells_them_and_nothing_else() {
        assert_eq!(parse(r#"{"priority": 3}"#), Ok((3, None)));
        assert_eq!(
            parse(r#"{"priority": -3.0, "limit": 7.0}"#),
            Ok((-3, Some(7)))
        );
        assert_eq!(parse(r#"{"priority": 1, "limit": null}"#), Ok((1, None)));
        assert!(
            parse(r#"{"priority": 1.5}"#)
                .unwrap_err()
                .contains("not an integer")
        );
        assert!(
            parse(r#"{"priority": 3e9}"#)
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            parse(r#"{"priority": 1, "limit": -1}"#)
                .unwrap_err()
                .contains("out of range")
        );
        assert!(parse(r#"{"priority": "1"}"#).is_err());
    }
}
