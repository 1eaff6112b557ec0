//! Formulas: numbers, series letters (A = the first series), + - * / and parentheses.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Expression {
    Number(f64),
    Series(usize),
    Negate(Box<Expression>),
    Binary(Box<Expression>, char, Box<Expression>),
}

impl Expression {
    pub(super) fn parse(text: &str, series_count: usize) -> Result<Expression, String> {
        let tokens = tokenize(text)?;
        let mut parser = FormulaParser {
            tokens: &tokens,
            position: 0,
            series_count,
        };
        let expression = parser.sum()?;
        if parser.position != tokens.len() {
            return Err(format!(
                "Unexpected '{}' in formula '{text}'.",
                tokens[parser.position]
            ));
        }
        Ok(expression)
    }

    /// The value at one bucket; dividing by zero gives 0 (as PostHog's formulas do).
    pub(super) fn evaluate(&self, series: &[Vec<f64>], index: usize) -> f64 {
        match self {
            Expression::Number(value) => *value,
            Expression::Series(letter) => series
                .get(*letter)
                .and_then(|values| values.get(index))
                .copied()
                .unwrap_or(0.0),
            Expression::Negate(inner) => -inner.evaluate(series, index),
            Expression::Binary(left, operator, right) => {
                let (left, right) = (left.evaluate(series, index), right.evaluate(series, index));
                match operator {
                    '+' => left + right,
                    '-' => left - right,
                    '*' => left * right,
                    _ if right == 0.0 => 0.0,
                    _ => left / right,
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Letter(char),
    Symbol(char),
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Number(value) => write!(f, "{value}"),
            Token::Letter(c) | Token::Symbol(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() || c == '.' {
            let mut digits = String::new();
            while let Some(&d) = chars.peek() {
                if d.is_ascii_digit() || d == '.' {
                    digits.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            let value = digits
                .parse()
                .map_err(|_| format!("'{digits}' is not a number."))?;
            tokens.push(Token::Number(value));
        } else if c.is_ascii_alphabetic() {
            chars.next();
            if chars
                .peek()
                .is_some_and(|next| next.is_ascii_alphanumeric())
            {
                return Err("Series are single letters (A, B, ...) in formulas.".into());
            }
            tokens.push(Token::Letter(c.to_ascii_uppercase()));
        } else if "+-*/()".contains(c) {
            chars.next();
            tokens.push(Token::Symbol(c));
        } else {
            return Err(format!(
                "Unexpected '{c}' in formula: use series letters, numbers, + - * / and parentheses."
            ));
        }
    }
    Ok(tokens)
}

struct FormulaParser<'a> {
    tokens: &'a [Token],
    position: usize,
    series_count: usize,
}

impl FormulaParser<'_> {
    fn peek_symbol(&self) -> Option<char> {
        match self.tokens.get(self.position) {
            Some(Token::Symbol(c)) => Some(*c),
            _ => None,
        }
    }

    fn sum(&mut self) -> Result<Expression, String> {
        let mut left = self.product()?;
        while let Some(operator @ ('+' | '-')) = self.peek_symbol() {
            self.position += 1;
            left = Expression::Binary(Box::new(left), operator, Box::new(self.product()?));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expression, String> {
        let mut left = self.unary()?;
        while let Some(operator @ ('*' | '/')) = self.peek_symbol() {
            self.position += 1;
            left = Expression::Binary(Box::new(left), operator, Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expression, String> {
        match self.peek_symbol() {
            Some('-') => {
                self.position += 1;
                Ok(Expression::Negate(Box::new(self.unary()?)))
            }
            Some('+') => {
                self.position += 1;
                self.unary()
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<Expression, String> {
        let token = self.tokens.get(self.position).cloned();
        self.position += 1;
        match token {
            Some(Token::Number(value)) => Ok(Expression::Number(value)),
            Some(Token::Letter(letter)) => {
                let index = (letter as u8 - b'A') as usize;
                if index >= self.series_count {
                    Err(format!(
                        "Series {letter} does not exist: there are {} series.",
                        self.series_count
                    ))
                } else {
                    Ok(Expression::Series(index))
                }
            }
            Some(Token::Symbol('(')) => {
                let inner = self.sum()?;
                if self.peek_symbol() != Some(')') {
                    return Err("A parenthesis is not closed in the formula.".into());
                }
                self.position += 1;
                Ok(inner)
            }
            Some(other) => Err(format!("Unexpected '{other}' in the formula.")),
            None => Err("The formula ends too early.".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_arithmetic() {
        let series = vec![vec![6.0], vec![3.0], vec![0.0]];
        let value = |text: &str| {
            Expression::parse(text, 3)
                .expect("parses")
                .evaluate(&series, 0)
        };
        assert_eq!(value("A + B * 2"), 12.0);
        assert_eq!(value("(A + B) * 2"), 18.0);
        assert_eq!(value("-A / b"), -2.0);
        assert_eq!(value("A / C"), 0.0);
        assert_eq!(value("A - 1.5"), 4.5);
        assert!(Expression::parse("A + ", 3).is_err());
        assert!(Expression::parse("(A", 3).is_err());
        assert!(Expression::parse("AB", 3).is_err());
        assert!(Expression::parse("A; drop", 3).is_err());
        assert!(Expression::parse("D", 3).is_err());
    }
}
